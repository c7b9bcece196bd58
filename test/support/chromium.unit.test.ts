import { describe, expect, it } from "vitest";
import { findChromium } from "./chromium.js";

describe("findChromium", () => {
  it("returns CHROMIUM_PATH when it exists, and nothing when it does not, rather than another browser", () => {
    const has = new Set(["/opt/chrome/chrome", "/usr/bin/chromium"]);
    expect(findChromium({ CHROMIUM_PATH: "/opt/chrome/chrome" }, (path) => has.has(path))).toBe("/opt/chrome/chrome");
    expect(findChromium({ CHROMIUM_PATH: "/nowhere/chrome" }, (path) => has.has(path))).toBeUndefined();
  });

  it("returns the first installed of the usual places: Debian's, then Google Chrome on Linux or macOS", () => {
    expect(findChromium({}, (path) => path === "/usr/bin/google-chrome-stable")).toBe("/usr/bin/google-chrome-stable");
    expect(findChromium({}, (path) => path.startsWith("/Applications/Google Chrome.app"))).toBe("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome");
    expect(findChromium({}, (path) => path === "/usr/bin/chromium" || path === "/usr/bin/google-chrome")).toBe("/usr/bin/chromium");
  });

  it("returns nothing where no browser is installed", () => {
    expect(findChromium({ PLAYWRIGHT_BROWSERS_PATH: "/nonexistent" }, () => false)).toBeUndefined();
  });
});
