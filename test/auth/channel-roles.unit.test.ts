import { describe, expect, it } from "vitest";
import { ChannelRoles, type GroupDirectory } from "../../lib/auth/channel-roles.js";
import { apiPrincipal, slackPrincipal, teamsPrincipal, type Principal } from "../../lib/auth/principal.js";
import { RoleLookupError } from "../../lib/errors.js";
import type { StructuredLogger } from "../../lib/logger.js";

const roles = new ChannelRoles({
  slack: { T1: { default: ["viewer"], users: { U1: ["analyst", "viewer"] } } },
  teams: { "tenant-1": { users: { "object-1": ["analyst"] } } },
});

/** A directory over a fixed membership table that records each lookup. */
function directory(members: Record<string, string[]>, failure?: Error): GroupDirectory & { lookups: string[][] } {
  const lookups: string[][] = [];
  return {
    lookups,
    async memberOf(principal: Principal, groupIds: readonly string[]) {
      lookups.push([...groupIds]);
      if (failure) throw failure;
      return groupIds.filter((g) => (members[principal.subject] ?? []).includes(g));
    },
  };
}

/** A Teams directory that knows who is a guest, records each question, and fails when told to. */
function guestDirectory(guests: string[], failure?: Error): GroupDirectory & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    memberOf: async (principal, groupIds) => groupIds.filter(() => principal.subject === "member-in-group"),
    async isGuest(principal: Principal) {
      asked.push(principal.subject);
      if (failure) throw failure;
      return guests.includes(principal.subject);
    },
  };
}

function recordingLogger(): StructuredLogger & { lines: { message: string; fields: Record<string, unknown> }[] } {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  const record = (message: string, fields: Record<string, unknown>) => void lines.push({ message, fields });
  return { lines, info: record, warn: record, error: record };
}

const HOST = {
  default: ["analyst", "approver"],
  groups: { G_FINANCE: ["finance"] },
  users: { "guest-listed": ["reviewer"] },
  guest: ["viewer"],
};

const grouped = { T1: { default: ["viewer"], groups: { S_FINANCE: ["analyst"], S_OPS: ["operator", "viewer"] } } };

describe("auth/channel-roles", () => {
  describe("rolesOf", () => {
    it("returns the workspace default and the user's own roles, sorted and once each", async () => {
      expect(await roles.rolesOf(slackPrincipal("T1", "U1"))).toEqual(["analyst", "viewer"]);
    });

    it("returns the default alone for a user with no entry", async () => {
      expect(await roles.rolesOf(slackPrincipal("T1", "U2"))).toEqual(["viewer"]);
    });

    it("returns no roles for a workspace or tenant that is not configured, or a Teams user without a tenant", async () => {
      expect(await roles.rolesOf(slackPrincipal("T9", "U1"))).toEqual([]);
      expect(await roles.rolesOf(teamsPrincipal(null, "object-1"))).toEqual([]);
      expect(await roles.rolesOf(teamsPrincipal("tenant-1", "object-1"))).toEqual(["analyst"]);
    });

    it("returns no roles to an API principal named like a channel user, nor across channels", async () => {
      expect(await roles.rolesOf(apiPrincipal("U1", "T1"))).toEqual([]);
      expect(await roles.rolesOf(teamsPrincipal("T1", "U1"))).toEqual([]);
    });

    it("returns no roles to a principal without a tenant or an API principal, whatever the configuration holds", async () => {
      const config = { slack: {}, teams: { null: { default: ["admin"] } }, api: { acme: { default: ["admin"] } } };
      const loose = new ChannelRoles(config as unknown as ConstructorParameters<typeof ChannelRoles>[0]);
      expect(await loose.rolesOf(teamsPrincipal(null, "object-1"))).toEqual([]);
      expect(await loose.rolesOf(apiPrincipal("alice", "acme"))).toEqual([]);
    });

    it("returns no roles for ids that are names of Object's prototype", async () => {
      expect(await roles.rolesOf(slackPrincipal("constructor", "toString"))).toEqual([]);
      expect(await roles.rolesOf(slackPrincipal("T1", "constructor"))).toEqual(["viewer"]);
    });

    it("returns the roles of each configured group the user is a member of, asking only about those groups", async () => {
      const slack = directory({ U1: ["S_OPS", "S_FINANCE"], U2: ["S_OPS"] });
      const withGroups = new ChannelRoles({ slack: grouped, teams: {} }, { slack });
      expect(await withGroups.rolesOf(slackPrincipal("T1", "U1"))).toEqual(["analyst", "operator", "viewer"]);
      expect(await withGroups.rolesOf(slackPrincipal("T1", "U2"))).toEqual(["operator", "viewer"]);
      expect(await withGroups.rolesOf(slackPrincipal("T1", "U3"))).toEqual(["viewer"]);
      expect(slack.lookups).toEqual([
        ["S_FINANCE", "S_OPS"],
        ["S_FINANCE", "S_OPS"],
        ["S_FINANCE", "S_OPS"],
      ]);
    });

    it("returns no roles for a group the directory names that the tenant's entry does not configure", async () => {
      const slack: GroupDirectory = { memberOf: async () => ["S_OTHER"] };
      const withGroups = new ChannelRoles({ slack: grouped, teams: {} }, { slack });
      expect(await withGroups.rolesOf(slackPrincipal("T1", "U1"))).toEqual(["viewer"]);
    });

    it("returns no group roles for a group name that is a name of Object's prototype", async () => {
      const slack = directory({ U1: ["constructor"] });
      const withGroups = new ChannelRoles({ slack: grouped, teams: {} }, { slack });
      expect(await withGroups.rolesOf(slackPrincipal("T1", "U1"))).toEqual(["viewer"]);
    });

    it("does not look groups up for a tenant whose entry names none", async () => {
      const slack = directory({ U1: ["S_FINANCE"] });
      const withGroups = new ChannelRoles({ slack: { ...grouped, T2: { default: ["viewer"] } }, teams: {} }, { slack });
      expect(await withGroups.rolesOf(slackPrincipal("T2", "U1"))).toEqual(["viewer"]);
      expect(slack.lookups).toEqual([]);
    });

    it("throws RoleLookupError when groups are configured but the channel has no directory", async () => {
      const withGroups = new ChannelRoles({ slack: grouped, teams: {} });
      await expect(withGroups.rolesOf(slackPrincipal("T1", "U1"))).rejects.toMatchObject({
        name: "RoleLookupError",
        channel: "slack",
        message: "slack group roles are configured but slack is not connected",
      });
    });

    it("throws RoleLookupError, with the directory's failure as cause, rather than return fewer roles", async () => {
      const cause = new Error("missing_scope");
      const withGroups = new ChannelRoles({ slack: grouped, teams: {} }, { slack: directory({}, cause) });
      const error = await withGroups.rolesOf(slackPrincipal("T1", "U1")).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RoleLookupError);
      expect((error as RoleLookupError).cause).toBe(cause);
      expect((error as RoleLookupError).message).toBe("slack group memberships could not be read");
    });

    it("throws the directory's own RoleLookupError as it is", async () => {
      const own = new RoleLookupError("teams group lookup was throttled", "teams");
      const withGroups = new ChannelRoles(
        { slack: {}, teams: { "tenant-1": { groups: { G1: ["analyst"] } } } },
        { teams: { ...directory({}, own), isGuest: async () => false } },
      );
      expect(await withGroups.rolesOf(teamsPrincipal("tenant-1", "object-1")).catch((e: unknown) => e)).toBe(own);
    });

    describe("a Teams guest", () => {
      it("returns the tenant's default and group roles to a member, after asking the directory once", async () => {
        const teams = guestDirectory(["guest-1"]);
        const roles = new ChannelRoles({ slack: {}, teams: { "tenant-1": HOST } }, { teams });
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "member-in-group"))).toEqual(["analyst", "approver", "finance"]);
        expect(teams.asked).toEqual(["member-in-group"]);
      });

      it("returns only the tenant's guest roles to a guest, never its default nor its groups", async () => {
        const teams = guestDirectory(["member-in-group"]);
        const roles = new ChannelRoles({ slack: {}, teams: { "tenant-1": HOST } }, { teams });
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "member-in-group"))).toEqual(["viewer"]);
      });

      it("returns a guest's own entry under users with the guest roles", async () => {
        const roles = new ChannelRoles({ slack: {}, teams: { "tenant-1": HOST } }, { teams: guestDirectory(["guest-listed"]) });
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "guest-listed"))).toEqual(["reviewer", "viewer"]);
      });

      it("returns no roles to a guest of a tenant whose entry names no guest roles", async () => {
        const { guest: _, ...noGuest } = HOST;
        const roles = new ChannelRoles({ slack: {}, teams: { "tenant-1": noGuest } }, { teams: guestDirectory(["guest-1"]) });
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "guest-1"))).toEqual([]);
      });

      it("does not ask the directory when a guest's roles and a member's would be the same", async () => {
        const teams = guestDirectory(["object-1"]);
        const roles = new ChannelRoles({ slack: {}, teams: { "tenant-1": { users: { "object-1": ["analyst"] } } } }, { teams });
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "object-1"))).toEqual(["analyst"]);
        expect(teams.asked).toEqual([]);
      });

      it("takes the user for a guest and logs why, without ids, when the directory cannot tell", async () => {
        const logger = recordingLogger();
        const failing = guestDirectory([], new RoleLookupError("microsoft graph answered 403 to a user's userType", "teams"));
        const roles = new ChannelRoles({ slack: {}, teams: { "tenant-1": HOST } }, { teams: failing }, logger);
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "member-in-group"))).toEqual(["viewer"]);
        expect(logger.lines).toEqual([
          {
            message: "teams guest check failed, no host roles",
            fields: { channel: "teams", reason: "lookup_failed", error: "RoleLookupError", detail: "microsoft graph answered 403 to a user's userType" },
          },
        ]);
        expect(JSON.stringify(logger.lines)).not.toContain("member-in-group");
      });

      it("logs an unexpected failure by its name alone", async () => {
        const logger = recordingLogger();
        const roles = new ChannelRoles(
          { slack: {}, teams: { "tenant-1": HOST } },
          { teams: guestDirectory([], new TypeError("fetch failed: tenant-1")) },
          logger,
        );
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "object-9"))).toEqual(["viewer"]);
        expect(logger.lines[0]?.fields).toEqual({ channel: "teams", reason: "lookup_failed", error: "TypeError", detail: undefined });
      });

      it("takes every Teams user for a guest when Teams has no directory, and logs it", async () => {
        const logger = recordingLogger();
        const roles = new ChannelRoles({ slack: {}, teams: { "tenant-1": HOST } }, {}, logger);
        expect(await roles.rolesOf(teamsPrincipal("tenant-1", "member-in-group"))).toEqual(["viewer"]);
        expect(logger.lines.map((l) => l.fields.reason)).toEqual(["not_connected"]);
      });

      it("never asks about Slack users, whose guests are users of their own team", async () => {
        const teams = guestDirectory(["U1"]);
        const roles = new ChannelRoles({ slack: { T1: { default: ["viewer"] } }, teams: {} }, { teams, slack: guestDirectory(["U1"]) });
        expect(await roles.rolesOf(slackPrincipal("T1", "U1"))).toEqual(["viewer"]);
        expect(teams.asked).toEqual([]);
      });
    });
  });
});
