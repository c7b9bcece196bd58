import { describe, expect, it } from "vitest";
import { DEFAULT_JWT_AUDIENCE, loadAuthConfig, parseChannelRoles } from "../../lib/config/auth-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("auth config", () => {
  describe("loadAuthConfig", () => {
    it("returns local keys (no issuer), the default audience and claims, and no channel roles when nothing is set", () => {
      expect(loadAuthConfig({})).toEqual({
        issuer: undefined,
        audience: DEFAULT_JWT_AUDIENCE,
        jwksUrl: undefined,
        tenantClaim: "tenant",
        rolesClaim: "roles",
        requireTenant: false,
        channelRoles: { slack: {}, teams: {} },
      });
    });

    it("throws ValidationError naming JWT_JWKS_URL when it is not a URL", () => {
      expect(() => loadAuthConfig({ JWT_JWKS_URL: "keys" })).toThrow(expect.objectContaining({ details: [expect.objectContaining({ path: "JWT_JWKS_URL" })] }));
    });
  });

  describe("parseChannelRoles", () => {
    it("throws ValidationError for a guest key in SLACK_ROLES, which only Teams has", () => {
      expect(() => parseChannelRoles('{"T1": {"guest": ["viewer"]}}', "SLACK_ROLES")).toThrow(ValidationError);
      expect(parseChannelRoles('{"t1": {"guest": ["viewer"]}}', "TEAMS_ROLES")).toEqual({ t1: { guest: ["viewer"] } });
    });
  });
});
