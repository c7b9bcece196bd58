import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { teamsPrincipal } from "../../../lib/auth/principal.js";
import { EntraGroupDirectory } from "../../../lib/channels/teams/entra-group-directory.js";
import { RoleLookupError } from "../../../lib/errors.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../../support/bot-connector-endpoint.js";

const APP_ID = "00000000-0000-4000-8000-00000000a001";
const APP_PASSWORD = "graph-test-secret";
const TENANT = "72f988bf-0000-4000-8000-000000000001";
const ALICE = "6f0c0000-0000-4000-8000-0000000000a1";
const GUEST = "6f0c0000-0000-4000-8000-0000000000b2";
const NO_TYPE = "6f0c0000-0000-4000-8000-0000000000b3";
const GROUPS = Array.from({ length: 25 }, (_, i) => `9a000000-0000-4000-8000-${String(i).padStart(12, "0")}`);
let entra: BotConnectorEndpoint;

beforeAll(async () => {
  entra = await startBotConnectorEndpoint({
    appId: APP_ID,
    appPassword: APP_PASSWORD,
    groupMembers: { [ALICE]: [GROUPS[1], GROUPS[22]] },
    userTypes: { [GUEST]: "Guest", [NO_TYPE]: null },
  });
});
afterAll(async () => entra?.close());

function directoryAt(clock: { now: number }) {
  return new EntraGroupDirectory({
    appId: APP_ID,
    appPassword: APP_PASSWORD,
    tokenUrl: entra.tokenUrl,
    graphUrl: entra.graphUrl,
    cacheMs: 60_000,
    now: () => clock.now,
  });
}

describe("channels/teams/entra-group-directory", () => {
  describe("memberOf", () => {
    it("returns the user's groups among the configured ones, asking Graph at most 20 at a time with a token of the user's tenant", async () => {
      const before = entra.graphChecks.length;
      expect(await directoryAt({ now: 0 }).memberOf(teamsPrincipal(TENANT, ALICE), GROUPS)).toEqual([GROUPS[1], GROUPS[22]]);
      const checks = entra.graphChecks.slice(before);
      expect(checks.map((c) => c.groupIds.length)).toEqual([20, 5]);
      expect(checks.every((c) => c.tenant === TENANT && c.objectId === ALICE)).toBe(true);
      expect(entra.tokenRequests.at(-1)).toEqual({ tenant: TENANT, clientId: APP_ID, scope: "https://graph.microsoft.com/.default" });
    });

    it("reuses a user's answer while it is fresh, and asks again after it expires", async () => {
      const clock = { now: 0 };
      const directory = directoryAt(clock);
      const before = entra.graphChecks.length;
      await directory.memberOf(teamsPrincipal(TENANT, ALICE), GROUPS.slice(0, 2));
      await directory.memberOf(teamsPrincipal(TENANT, ALICE), GROUPS.slice(0, 2));
      expect(entra.graphChecks.length - before).toBe(1);
      clock.now += 60_000;
      await directory.memberOf(teamsPrincipal(TENANT, ALICE), GROUPS.slice(0, 2));
      expect(entra.graphChecks.length - before).toBe(2);
    });

    it("returns no groups, without asking Graph, for a user without an Entra object id or a tenant", async () => {
      const before = entra.graphChecks.length;
      expect(await directoryAt({ now: 0 }).memberOf(teamsPrincipal(TENANT, "29:1a2b3c"), GROUPS)).toEqual([]);
      expect(await directoryAt({ now: 0 }).memberOf(teamsPrincipal(null, ALICE), GROUPS)).toEqual([]);
      expect(entra.graphChecks.length).toBe(before);
    });

    it("throws RoleLookupError when Graph refuses (an app without GroupMember.Read.All), and asks again next time", async () => {
      const directory = directoryAt({ now: 0 });
      entra.failNextGraphCheck(403);
      const error = await directory.memberOf(teamsPrincipal(TENANT, ALICE), GROUPS.slice(0, 2)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RoleLookupError);
      expect((error as Error).message).toMatch(/403/);
      expect(await directory.memberOf(teamsPrincipal(TENANT, ALICE), GROUPS.slice(0, 2))).toEqual([GROUPS[1]]);
    });
  });
  describe("isGuest", () => {
    it("returns false for a member and true for a guest, from Graph's userType read with a token of the user's tenant", async () => {
      const directory = directoryAt({ now: 0 });
      const before = entra.userTypeReads.length;
      expect(await directory.isGuest(teamsPrincipal(TENANT, ALICE))).toBe(false);
      expect(await directory.isGuest(teamsPrincipal(TENANT, GUEST))).toBe(true);
      expect(entra.userTypeReads.slice(before)).toEqual([
        { objectId: ALICE, tenant: TENANT, select: "userType" },
        { objectId: GUEST, tenant: TENANT, select: "userType" },
      ]);
    });

    it("returns true for an account without a userType: only Member is a member", async () => {
      expect(await directoryAt({ now: 0 }).isGuest(teamsPrincipal(TENANT, NO_TYPE))).toBe(true);
    });

    it("asks Graph once per user while the answer is fresh, concurrent turns included, and again after it expires", async () => {
      const clock = { now: 0 };
      const directory = directoryAt(clock);
      const before = entra.userTypeReads.length;
      await Promise.all([directory.isGuest(teamsPrincipal(TENANT, GUEST)), directory.isGuest(teamsPrincipal(TENANT, GUEST))]);
      clock.now += 59_999;
      expect(await directory.isGuest(teamsPrincipal(TENANT, GUEST))).toBe(true);
      expect(entra.userTypeReads.length - before).toBe(1);
      clock.now += 1;
      await directory.isGuest(teamsPrincipal(TENANT, GUEST));
      expect(entra.userTypeReads.length - before).toBe(2);
    });

    it("throws RoleLookupError when Graph refuses (an app without User.Read.All), and asks again next time", async () => {
      const directory = directoryAt({ now: 0 });
      entra.failNextUserRead(403);
      const error = await directory.isGuest(teamsPrincipal(TENANT, ALICE)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RoleLookupError);
      expect((error as Error).message).toBe("microsoft graph answered 403 to a user's userType");
      expect(await directory.isGuest(teamsPrincipal(TENANT, ALICE))).toBe(false);
    });

    it("throws RoleLookupError when Graph cannot be reached", async () => {
      const directory = new EntraGroupDirectory({ appId: APP_ID, appPassword: APP_PASSWORD, tokenUrl: entra.tokenUrl, graphUrl: "http://127.0.0.1:1/v1.0/" });
      const error = await directory.isGuest(teamsPrincipal(TENANT, ALICE)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RoleLookupError);
      expect((error as Error).message).toBe("microsoft graph could not be reached for a user's userType");
    });

    it("throws RoleLookupError, without asking Graph, for a user without an Entra object id or a tenant", async () => {
      const before = entra.userTypeReads.length;
      await expect(directoryAt({ now: 0 }).isGuest(teamsPrincipal(TENANT, "29:1a2b3c"))).rejects.toBeInstanceOf(RoleLookupError);
      await expect(directoryAt({ now: 0 }).isGuest(teamsPrincipal(null, ALICE))).rejects.toBeInstanceOf(RoleLookupError);
      expect(entra.userTypeReads.length).toBe(before);
    });
  });
});
