import { describe, expect, it } from "vitest";
import { loadChannelEndpointsConfig } from "../../lib/config/channels-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("channels config", () => {
  describe("loadChannelEndpointsConfig", () => {
    it("returns nothing set when nothing is set: each client applies its own default", () => {
      expect(Object.values(loadChannelEndpointsConfig({})).filter((value) => value !== undefined)).toEqual([]);
    });

    it("returns the origin alone of TEAMS_SERVICE_URL_ORIGIN", () => {
      expect(loadChannelEndpointsConfig({ TEAMS_SERVICE_URL_ORIGIN: "http://127.0.0.1:3978/connector/" }).teamsServiceUrlOrigin).toBe("http://127.0.0.1:3978");
    });

    it("throws ValidationError naming SLACK_API_URL when it is not a URL", () => {
      expect(() => loadChannelEndpointsConfig({ SLACK_API_URL: "slack" })).toThrow(ValidationError);
    });
  });
});
