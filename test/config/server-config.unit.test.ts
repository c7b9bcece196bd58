import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_MESSAGE_CHARS, DEFAULT_PORT, loadServerConfig } from "../../lib/config/server-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("server config", () => {
  describe("loadServerConfig", () => {
    it("returns the defaults when nothing is set", () => {
      expect(loadServerConfig({})).toMatchObject({ maxMessageChars: DEFAULT_MAX_MESSAGE_CHARS, port: DEFAULT_PORT });
    });

    it("throws ValidationError naming PORT for a port past 65535", () => {
      expect(() => loadServerConfig({ PORT: "70000" })).toThrow(expect.objectContaining({ details: [expect.objectContaining({ path: "PORT" })] }));
      expect(() => loadServerConfig({ PORT: "70000" })).toThrow(ValidationError);
    });
  });
});
