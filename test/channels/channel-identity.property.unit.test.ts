import fc from "fast-check";
import { ChannelRoles, type GroupDirectory } from "../../lib/auth/channel-roles.js";
import { parseSlackEvent, parseTeamsActivity, slackTurnJob, teamsTurnJob, type SlackDelivery, type TeamsDelivery } from "../../lib/channels/index.js";
import { RoleLookupError, ValidationError } from "../../lib/errors.js";
import { silentLogger } from "../../lib/logger.js";
import { propertyRuns } from "../support/property-runs.js";
import { appMention, BOT_USER, envelope as slackEnvelope } from "./slack/fixtures.js";
import { messageActivity } from "./teams/fixtures.js";

const SERVICE_URL = "https://smba.trafficmanager.net/amer/";
const HOST_TENANT = "11111111-0000-4000-8000-000000000001";
const HOST_TEAM = "T0HOST";
const AT = new Date("2026-12-01T10:00:00Z");

/** A value a field may hold in a body the channel signed: absent, a well-formed id, one of a few near misses, or another type. */
const field = (ids: readonly string[]) =>
  fc.oneof(
    fc.constant(undefined),
    fc.constantFrom(...ids),
    fc.constantFrom("", " ", " x", "x ", "a\u0000b", "a;b", "\u200b"),
    fc.string({ maxLength: 12 }),
    fc.constantFrom(null, 0, true, {}, []),
  );

/** A B2B guest: an object id in the host's directory, arriving with the host's tenant id, whose `userType` is Guest. */
const GUEST_OBJECT_ID = "6f0c0000-0000-4000-8000-0000000000c3";
const ENTRA_IDS = [HOST_TENANT, "22222222-0000-4000-8000-000000000002", GUEST_OBJECT_ID, "aad-user-1"];
const SLACK_TEAMS = [HOST_TEAM, "T0GUEST", "T0PARTNER", "E0GRID"];

/** Builds an object, leaving out the fields that are undefined (absent, as in JSON). */
function present(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

const teamsCase = fc.record({
  fromId: fc.oneof(fc.constantFrom(...ENTRA_IDS), fc.constant("29:account")),
  aadObjectId: field(ENTRA_IDS),
  channelTenant: field(ENTRA_IDS),
  conversationTenant: field(ENTRA_IDS),
  /** Whether the directory answers the guest check, or fails (no permission, a timeout). */
  directoryAnswers: fc.boolean(),
});

type TeamsCase = typeof teamsCase extends fc.Arbitrary<infer T> ? T : never;

function teamsDelivery(c: TeamsCase): TeamsDelivery | { kind: "invalid" } {
  const activity = messageActivity(SERVICE_URL, {
    id: "1700000000001",
    from: present({ id: c.fromId, name: "Someone", aadObjectId: c.aadObjectId }),
    conversation: present({ conversationType: "personal", id: "a:1chat", tenantId: c.conversationTenant }),
    channelData: { tenant: present({ id: c.channelTenant }) },
  });
  try {
    return parseTeamsActivity(activity);
  } catch (error) {
    // A field of another type than Teams sends is a malformed activity (400), which names nobody either.
    if (error instanceof ValidationError) return { kind: "invalid" };
    throw error;
  }
}

const ID_SHAPE = /^[0-9A-Za-z][0-9A-Za-z-]{0,99}$/;
const wellFormed = (v: unknown): v is string => typeof v === "string" && ID_SHAPE.test(v);

const slackCase = fc.record({
  user: fc.constantFrom("U0ALICE", "U0EVE", "W0GRID"),
  shared: fc.oneof(fc.boolean(), fc.constant(undefined)),
  userTeam: field(SLACK_TEAMS),
  sourceTeam: field(SLACK_TEAMS),
});

type SlackCase = typeof slackCase extends fc.Arbitrary<infer T> ? T : never;

function slackDelivery(c: SlackCase): SlackDelivery {
  const event = appMention(present({ user: c.user, text: `<@${BOT_USER}> hello`, user_team: c.userTeam, source_team: c.sourceTeam }));
  const body = JSON.parse(slackEnvelope(event));
  body.team_id = HOST_TEAM;
  if (c.shared === undefined) delete body.is_ext_shared_channel;
  else body.is_ext_shared_channel = c.shared;
  try {
    return parseSlackEvent(JSON.stringify(body));
  } catch (error) {
    // A field of another type than Slack sends is a malformed body (400), which names nobody either.
    if (error instanceof ValidationError) return { kind: "ignore", reason: "unsupported_event" };
    throw error;
  }
}

const SLACK_TEAM_SHAPE = /^[A-Z0-9]{1,64}$/;

/** Host users get `host-default`, the host tenant's guests `host-guest`; only the partner's users have roles of their own. */
const ROLES = {
  slack: { [HOST_TEAM]: { default: ["host-default"] }, T0PARTNER: { default: ["partner"] } },
  teams: { [HOST_TENANT]: { default: ["host-default"], guest: ["host-guest"] } },
};
const roles = new ChannelRoles(ROLES);

/** The host tenant's directory as Graph answers `userType`: one guest, everyone else a member; or a failure. */
function entraDirectory(answers: boolean): GroupDirectory {
  return {
    memberOf: async () => [],
    isGuest: async (principal) => {
      if (!answers) throw new RoleLookupError("microsoft graph answered 403 to a user's userType", "teams");
      return principal.subject === GUEST_OBJECT_ID;
    },
  };
}

describe("channel identities (issue 31)", () => {
  describe("parseTeamsActivity", () => {
    it("maps every combination of tenant and user fields to exactly one principal of what Teams vouches for, or a refusal", async () => {
      await fc.assert(
        fc.asyncProperty(teamsCase, async (c) => {
          const delivery = teamsDelivery(c);
          // Total and deterministic: one answer, the same one again.
          expect(["message", "refused", "invalid"]).toContain(delivery.kind);
          expect(teamsDelivery(c)).toEqual(delivery);
          const vouched =
            wellFormed(c.aadObjectId) && wellFormed(c.channelTenant) && (c.conversationTenant === undefined || c.conversationTenant === c.channelTenant);
          if (delivery.kind !== "message") {
            expect(vouched).toBe(false);
            return;
          }
          expect(vouched).toBe(true);
          const job = teamsTurnJob(delivery.message, AT);
          // The subject is the Entra object id, exactly; never the channel account id unless they are the same string.
          expect(job.principal).toEqual({ issuer: "teams", tenant: c.channelTenant, subject: c.aadObjectId });
          expect(job.owner).toEqual({ issuer: "teams", tenant: c.channelTenant, subject: null });
          const teamsRoles = new ChannelRoles(ROLES, { teams: entraDirectory(c.directoryAnswers) }, silentLogger);
          const got = await teamsRoles.rolesOf(job.principal);
          // A host member gets the host's defaults; a guest, or anyone the directory could not vouch for, only the guest roles.
          const host = c.channelTenant === HOST_TENANT;
          const member = c.directoryAnswers && c.aadObjectId !== GUEST_OBJECT_ID;
          expect(got).toEqual(host ? [member ? "host-default" : "host-guest"] : []);
        }),
        { numRuns: propertyRuns(1_000) },
      );
    });
  });

  describe("parseSlackEvent", () => {
    it("maps every combination of shared-channel and team fields to exactly one principal of the user's own team, or a refusal", async () => {
      await fc.assert(
        fc.asyncProperty(slackCase, async (c) => {
          const delivery = slackDelivery(c);
          expect(slackDelivery(c)).toEqual(delivery);
          const own = c.shared === true ? [c.userTeam, c.sourceTeam].find((t) => typeof t === "string" && SLACK_TEAM_SHAPE.test(t)) : HOST_TEAM;
          const malformed = [c.userTeam, c.sourceTeam].some((t) => t !== undefined && typeof t !== "string");
          if (delivery.kind !== "message") {
            expect(own === undefined || malformed).toBe(true);
            return;
          }
          expect(own).toBeDefined();
          const job = slackTurnJob(delivery.message, AT);
          expect(job.principal).toEqual({ issuer: "slack", tenant: own, subject: c.user });
          // The thread is the host workspace's whoever wrote in it.
          expect(job.owner).toEqual({ issuer: "slack", tenant: HOST_TEAM, subject: null });
          const got = await roles.rolesOf(job.principal);
          // A guest of another organisation never gets the host's defaults; only their own team's.
          expect(got.includes("host-default")).toBe(own === HOST_TEAM);
          expect(got.includes("partner")).toBe(own === "T0PARTNER");
        }),
        { numRuns: propertyRuns(1_000) },
      );
    });
  });
});
