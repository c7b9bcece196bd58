import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * How the browser tests start it: headless, and without the background networking this machine's
 * closed network refuses (and that CI cannot reach).
 */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Where a Chromium or Chrome is installed, for the console's browser tests: `CHROMIUM_PATH` when
 * set, else the first of the usual places on Linux (Debian's package, which `.ci/install-chromium.sh`
 * installs, snap, Google's), macOS and Windows, else a browser Playwright downloaded.
 */
export function findChromium(env: Record<string, string | undefined> = process.env, exists: (path: string) => boolean = existsSync): string | undefined {
  if (env.CHROMIUM_PATH) return exists(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : undefined;
  const programFiles = [env.PROGRAMFILES, env["PROGRAMFILES(X86)"], env.LOCALAPPDATA].filter((dir): dir is string => Boolean(dir));
  const candidates = [
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/snap/bin/chromium",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    ...programFiles.map((dir) => join(dir, "Google", "Chrome", "Application", "chrome.exe")),
    ...playwrightChromiums(env.PLAYWRIGHT_BROWSERS_PATH ?? join(homedir(), ".cache", "ms-playwright")),
  ];
  return candidates.find((path) => exists(path));
}

/** Chromium builds Playwright downloaded (`npx playwright install chromium`), newest first. */
function playwrightChromiums(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir).filter((name) => /^chromium-\d+$/.test(name));
  } catch {
    return [];
  }
  return entries
    .sort()
    .reverse()
    .flatMap((name) => [
      join(dir, name, "chrome-linux", "chrome"),
      join(dir, name, "chrome-linux64", "chrome"),
      join(dir, name, "chrome-mac", "Chromium.app", "Contents", "MacOS", "Chromium"),
    ]);
}
