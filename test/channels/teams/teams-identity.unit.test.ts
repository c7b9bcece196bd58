import { isTeamsServiceUrl, teamsIdentityOf } from "../../../lib/channels/teams/teams-identity.js";

const TENANT = "72f988bf-0000-4000-8000-00000000aa01";
const AAD = "6f0c0000-0000-4000-8000-0000000000a1";
const activity = (fields: Record<string, unknown> = {}) => ({
  from: { id: "29:account", aadObjectId: AAD },
  conversation: { tenantId: TENANT },
  channelData: { tenant: { id: TENANT } },
  ...fields,
});

describe("teams/teams-identity", () => {
  describe("teamsIdentityOf", () => {
    it("returns the Entra object id in channelData's tenant", () => {
      expect(teamsIdentityOf(activity())).toEqual({ kind: "user", principal: { issuer: "teams", tenant: TENANT, subject: AAD } });
      expect(teamsIdentityOf(activity({ conversation: {} }))).toMatchObject({ kind: "user" });
    });

    it("refuses an activity without an object id, without a tenant, or from another tenant than its conversation's", () => {
      expect(teamsIdentityOf(activity({ from: { id: AAD } }))).toEqual({ kind: "refused", reason: "no_object_id" });
      expect(teamsIdentityOf(activity({ from: { id: "x", aadObjectId: ` ${AAD}` } }))).toEqual({ kind: "refused", reason: "no_object_id" });
      expect(teamsIdentityOf(activity({ channelData: {} }))).toEqual({ kind: "refused", reason: "no_tenant" });
      expect(teamsIdentityOf(activity({ conversation: { tenantId: "other" } }))).toEqual({ kind: "refused", reason: "other_tenant" });
      expect(teamsIdentityOf(null)).toEqual({ kind: "refused", reason: "no_object_id" });
    });
  });

  describe("isTeamsServiceUrl", () => {
    it("returns true for Teams' Bot Connectors only, over https on the default port", () => {
      expect(isTeamsServiceUrl("https://smba.trafficmanager.net/emea/")).toBe(true);
      expect(isTeamsServiceUrl("https://smba.infra.dod.teams.microsoft.us/")).toBe(true);
      for (const url of ["https://directline.botframework.com/", "http://smba.trafficmanager.net/", "https://x@smba.trafficmanager.net/", "not a url"]) {
        expect(isTeamsServiceUrl(url)).toBe(false);
      }
    });

    it("returns true for the stand-in's origin only, when one is given", () => {
      expect(isTeamsServiceUrl("http://127.0.0.1:4000/", "http://127.0.0.1:4000/")).toBe(true);
      expect(isTeamsServiceUrl("https://smba.trafficmanager.net/emea/", "http://127.0.0.1:4000")).toBe(false);
    });
  });
});
