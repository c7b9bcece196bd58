import { describe, expect, it } from "vitest";
import { ChannelRoles } from "../../lib/auth/channel-roles.js";
import { apiPrincipal, slackPrincipal, teamsPrincipal } from "../../lib/auth/principal.js";

const roles = new ChannelRoles({
  slack: { T1: { default: ["viewer"], users: { U1: ["analyst", "viewer"] } } },
  teams: { "tenant-1": { users: { "object-1": ["analyst"] } } },
});

describe("auth/channel-roles", () => {
  describe("rolesOf", () => {
    it("returns the workspace default and the user's own roles, sorted and once each", () => {
      expect(roles.rolesOf(slackPrincipal("T1", "U1"))).toEqual(["analyst", "viewer"]);
    });

    it("returns the default alone for a user with no entry", () => {
      expect(roles.rolesOf(slackPrincipal("T1", "U2"))).toEqual(["viewer"]);
    });

    it("returns no roles for a workspace or tenant that is not configured, or a Teams user without a tenant", () => {
      expect(roles.rolesOf(slackPrincipal("T9", "U1"))).toEqual([]);
      expect(roles.rolesOf(teamsPrincipal(null, "object-1"))).toEqual([]);
      expect(roles.rolesOf(teamsPrincipal("tenant-1", "object-1"))).toEqual(["analyst"]);
    });

    it("returns no roles to an API principal named like a channel user, nor across channels", () => {
      expect(roles.rolesOf(apiPrincipal("U1", "T1"))).toEqual([]);
      expect(roles.rolesOf(teamsPrincipal("T1", "U1"))).toEqual([]);
    });

    it("returns no roles for ids that are names of Object's prototype", () => {
      expect(roles.rolesOf(slackPrincipal("constructor", "toString"))).toEqual([]);
      expect(roles.rolesOf(slackPrincipal("T1", "constructor"))).toEqual(["viewer"]);
    });
  });
});
