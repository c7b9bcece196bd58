import { describe, expect, it } from "vitest";
import { loadConfig } from "../../lib/config/config.js";
import { ValidationError } from "../../lib/errors.js";

function refusal(env: Record<string, string>): ValidationError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("the configuration was accepted");
}

describe("config", () => {
  describe("loadConfig", () => {
    it("returns no channel roles when SLACK_ROLES and TEAMS_ROLES are unset", () => {
      expect(loadConfig({}).auth.channelRoles).toEqual({ slack: {}, teams: {} });
    });

    it("returns the roles of Slack and Teams users by workspace and tenant", () => {
      const config = loadConfig({
        SLACK_ROLES: '{"T0123": {"default": ["viewer"], "users": {"U0ALICE": ["analyst"]}}}',
        TEAMS_ROLES: '{"72f988bf-0000-4000-8000-00000000aa01": {"users": {"6f0c0000-0000-4000-8000-0000000000a1": ["analyst"]}}}',
      });
      expect(config.auth.channelRoles.slack).toEqual({ T0123: { default: ["viewer"], users: { U0ALICE: ["analyst"] } } });
      expect(Object.keys(config.auth.channelRoles.teams)).toEqual(["72f988bf-0000-4000-8000-00000000aa01"]);
    });

    it("throws ValidationError naming the variable for roles that are not JSON or not role lists", () => {
      expect(refusal({ SLACK_ROLES: "T0123=analyst" }).details).toEqual([{ path: "SLACK_ROLES", message: "not JSON" }]);
      expect(refusal({ TEAMS_ROLES: '{"t1": {"users": {"u1": "analyst"}}}' }).details?.[0]?.path).toBe("TEAMS_ROLES.t1.users.u1");
    });

    it("throws ValidationError for a key it does not know, such as a misspelt groups, rather than ignoring it", () => {
      const error = refusal({ SLACK_ROLES: '{"T0123": {"group": {"S0FIN": ["finance"]}}}' });
      expect(error.details?.[0]?.path).toBe("SLACK_ROLES.T0123");
    });

    it("returns group roles by Slack user group or Entra group id", () => {
      const config = loadConfig({ TEAMS_ROLES: '{"tenant-1": {"groups": {"9a000000-0000-4000-8000-00000000f1a0": ["finance"]}}}' });
      expect(config.auth.channelRoles.teams["tenant-1"].groups).toEqual({ "9a000000-0000-4000-8000-00000000f1a0": ["finance"] });
    });
  });
});
