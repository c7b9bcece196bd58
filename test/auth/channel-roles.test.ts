import { describe, expect, it } from "vitest";
import { ChannelRoles, type GroupDirectory } from "../../lib/auth/channel-roles.js";
import { apiPrincipal, slackPrincipal, teamsPrincipal } from "../../lib/auth/principal.js";

const config = {
  slack: { T1: { default: ["viewer"], users: { U1: ["analyst"] }, groups: { S1: ["finance"] } } },
  teams: { "tenant-1": { users: { "object-1": ["analyst"] } } },
};

describe("auth/channel-roles", () => {
  describe("rolesOf", () => {
    it("returns the workspace default, the user's own roles and their groups' roles, sorted and once each", async () => {
      const directory: GroupDirectory = { memberOf: async (_principal, ids) => ids.filter((id) => id === "S1") };
      const roles = new ChannelRoles({ config, directories: { slack: directory } });
      expect(await roles.rolesOf(slackPrincipal("T1", "U1"))).toEqual(["analyst", "finance", "viewer"]);
    });

    it("returns the default alone for a user with no entry, and no group roles without a directory", async () => {
      expect(await new ChannelRoles({ config }).rolesOf(slackPrincipal("T1", "U2"))).toEqual(["viewer"]);
    });

    it("returns no roles for a workspace or tenant that is not configured, or a Teams user without a tenant", async () => {
      const roles = new ChannelRoles({ config });
      expect(await roles.rolesOf(slackPrincipal("T9", "U1"))).toEqual([]);
      expect(await roles.rolesOf(teamsPrincipal(null, "object-1"))).toEqual([]);
      expect(await roles.rolesOf(teamsPrincipal("tenant-1", "object-1"))).toEqual(["analyst"]);
    });

    it("returns no roles to an API principal named like a channel user, nor across channels", async () => {
      const roles = new ChannelRoles({ config });
      expect(await roles.rolesOf(apiPrincipal("U1", "T1"))).toEqual([]);
      expect(await roles.rolesOf(teamsPrincipal("T1", "U1"))).toEqual([]);
    });

    it("returns no roles for ids that are names of Object's prototype", async () => {
      const roles = new ChannelRoles({ config });
      expect(await roles.rolesOf(slackPrincipal("constructor", "toString"))).toEqual([]);
      expect(await roles.rolesOf(slackPrincipal("T1", "constructor"))).toEqual(["viewer"]);
    });
  });
});
