import { assertMayBeMember, mayAccess, relationTo, requireAccess, CONVERSATION_NEEDS } from "../../lib/auth/conversation-access.js";
import { apiPrincipal, slackPrincipal, teamsPrincipal, tenantOwner, type Principal } from "../../lib/auth/principal.js";
import { ForbiddenError, MemberOutsideTenantError, NotFoundError } from "../../lib/errors.js";

const ADMIN = { adminRoles: { tenantAdminRole: "threadwise:admin", operatorRole: "threadwise:operator" } };
const as = (principal: Principal, roles: string[] = []) => ({ principal, roles });
const alice = apiPrincipal("alice", "acme");
const bob = apiPrincipal("bob", "acme");
const shared = { _id: "c1", owner: alice, members: [bob] };
const thread = { _id: "c2", owner: tenantOwner("slack", "T0") };

describe("conversation-access", () => {
  describe("relationTo", () => {
    it("returns owner only when issuer, tenant and subject all equal", () => {
      expect(relationTo(shared, as(alice))).toBe("owner");
      for (const p of [apiPrincipal("alice"), apiPrincipal("alice", "globex"), slackPrincipal("acme", "alice")])
        expect(relationTo(shared, as(p))).toBeUndefined();
    });

    it("returns member for a listed principal, and nothing for the same subject of another tenant", () => {
      expect(relationTo(shared, as(bob))).toBe("member");
      expect(relationTo(shared, as(apiPrincipal("bob", "globex")))).toBeUndefined();
    });

    it("returns channel for a user of the workspace or tenant that owns a channel thread, never for an API principal", () => {
      expect(relationTo(thread, as(slackPrincipal("T0", "U1")))).toBe("channel");
      expect(relationTo(thread, as(slackPrincipal("T1", "U1")))).toBeUndefined();
      expect(relationTo(thread, as(teamsPrincipal("T0", "U1")))).toBeUndefined();
      expect(relationTo(thread, as(apiPrincipal("U1", "T0")))).toBeUndefined();
    });

    it("returns channel for a user of another team whom the owning workspace's signed request vouches for (Slack Connect), and only then", () => {
      const guest = as(slackPrincipal("T9", "U9"));
      expect(relationTo(thread, guest)).toBeUndefined();
      expect(relationTo(thread, guest, { channel: tenantOwner("slack", "T0") })).toBe("channel");
      expect(relationTo(thread, guest, { channel: tenantOwner("slack", "T9") })).toBeUndefined();
      expect(relationTo(thread, as(apiPrincipal("U9", "T0")), { channel: tenantOwner("slack", "T0") })).toBeUndefined();
      expect(relationTo(shared, as(apiPrincipal("mallory", "acme")), { channel: alice })).toBeUndefined();
    });

    it("returns admin only with the admin roles given, for the owner's own tenant", () => {
      const ann = as(apiPrincipal("ann", "acme"), ["threadwise:admin"]);
      expect(relationTo(shared, ann)).toBeUndefined();
      expect(relationTo(shared, ann, ADMIN)).toBe("admin");
      expect(relationTo(shared, as(apiPrincipal("gus", "globex"), ["threadwise:admin"]), ADMIN)).toBeUndefined();
      expect(relationTo(shared, as(apiPrincipal("ops"), ["threadwise:operator"]), ADMIN)).toBe("admin");
    });
  });

  describe("mayAccess", () => {
    it("lets a member read and write, never manage or delete", () => {
      expect(CONVERSATION_NEEDS.filter((need) => mayAccess(shared, as(bob), need))).toEqual(["read", "write", "members"]);
      expect(CONVERSATION_NEEDS.filter((need) => mayAccess(shared, as(alice), need))).toEqual(["read", "write", "members", "manage", "delete"]);
    });
  });

  describe("requireAccess", () => {
    it("throws NotFoundError for a missing conversation and for one the caller has no relation to", () => {
      expect(() => requireAccess(null, "c0", as(alice), "read")).toThrow(NotFoundError);
      expect(() => requireAccess(shared, "c1", as(apiPrincipal("carol", "acme")), "read")).toThrow(NotFoundError);
    });

    it("throws NotFoundError to a tenant admin for anything but its members", () => {
      const ann = as(apiPrincipal("ann", "acme"), ["threadwise:admin"]);
      expect(() => requireAccess(shared, "c1", ann, "read", ADMIN)).toThrow(NotFoundError);
      expect(() => requireAccess(shared, "c1", ann, "delete", ADMIN)).toThrow(NotFoundError);
      expect(requireAccess(shared, "c1", ann, "manage", ADMIN)).toBe(shared);
    });

    it("throws ForbiddenError naming who may, to a member who manages or deletes", () => {
      expect(() => requireAccess(shared, "c1", as(bob), "manage", ADMIN)).toThrow(ForbiddenError);
      expect(() => requireAccess(shared, "c1", as(bob), "delete")).toThrow(/its owner/);
    });
  });

  describe("requireAccess for erase", () => {
    it("returns the conversation to a tenant admin of its tenant, a member or not, and throws NotFoundError to its owner and to another tenant's admin", () => {
      const ann = as(apiPrincipal("ann", "acme"), ["threadwise:admin"]);
      const bobAdmin = as(bob, ["threadwise:admin"]);
      expect(requireAccess(shared, "c1", ann, "erase", ADMIN)).toBe(shared);
      expect(requireAccess(shared, "c1", bobAdmin, "erase", ADMIN)).toBe(shared);
      expect(() => requireAccess(shared, "c1", as(alice), "erase", ADMIN)).toThrow(NotFoundError);
      expect(() => requireAccess(shared, "c1", as(apiPrincipal("gus", "globex"), ["threadwise:admin"]), "erase", ADMIN)).toThrow(NotFoundError);
    });
  });

  describe("assertMayBeMember", () => {
    it("throws MemberOutsideTenantError for another tenant, no tenant, the owner, and a channel thread", () => {
      expect(() => assertMayBeMember(shared, apiPrincipal("mallory", "globex"))).toThrow(MemberOutsideTenantError);
      expect(() => assertMayBeMember(shared, apiPrincipal("mallory"))).toThrow(MemberOutsideTenantError);
      expect(() => assertMayBeMember(shared, alice)).toThrow(MemberOutsideTenantError);
      expect(() => assertMayBeMember({ _id: "c3", owner: apiPrincipal("alice") }, apiPrincipal("bob"))).toThrow(MemberOutsideTenantError);
      expect(() => assertMayBeMember(thread, apiPrincipal("bob", "T0"))).toThrow(MemberOutsideTenantError);
      expect(() => assertMayBeMember(shared, apiPrincipal("carol", "acme"))).not.toThrow();
    });
  });
});
