import { startTestServer, type TestServer } from "../support/api-client.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { appMention, BOT_USER, TEAM } from "../channels/slack/fixtures.js";

const BOT_TOKEN = "xoxb-local-test-token";
const SHARED = "C0SHARED";
const GUEST_TEAM = "T0GUEST";
const PARTNER_TEAM = "T0PARTNER";
const FOLLOW_UP = 'create_follow_up {"title": "Review the West discounts"}';

let slackApi: SlackApiEndpoint;
let t: TestServer;

beforeAll(async () => {
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER });
  // Every user of the host workspace may follow up; of the other organisations, only the partner's Peggy.
  t = await startTestServer(
    {
      MODEL_PROVIDER: "local",
      SLACK_API_URL: slackApi.slackApiUrl,
      TOOL_ROLES: JSON.stringify({ create_follow_up: ["analyst"] }),
      SLACK_ROLES: JSON.stringify({ [TEAM]: { default: ["analyst"] }, [PARTNER_TEAM]: { users: { U0PEGGY: ["analyst"] } } }),
    },
    { channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN } } },
  );
});

afterAll(async () => {
  await t?.close();
  await slackApi?.close();
});

let tsCounter = 0;
/** A mention delivered as Slack delivers one from a Slack Connect channel: the host's `team_id`, the writer's `user_team` and `source_team`. */
async function mention(user: string, fields: { shared: boolean; userTeam?: string; sourceTeam?: string }): Promise<{ ts: string; status: number }> {
  tsCounter += 1;
  const ts = `1700019${String(tsCounter).padStart(3, "0")}.000100`;
  const event = appMention({
    user,
    ts,
    event_ts: ts,
    channel: SHARED,
    text: `<@${BOT_USER}> ${FOLLOW_UP}`,
    ...(fields.userTeam && { user_team: fields.userTeam, team: fields.userTeam }),
    ...(fields.sourceTeam && { source_team: fields.sourceTeam }),
  });
  const body = JSON.stringify({
    token: "deprecated-verification-token",
    team_id: TEAM,
    api_app_id: "A0APP",
    event,
    type: "event_callback",
    event_id: `Ev0CONNECT${String(tsCounter).padStart(4, "0")}`,
    event_time: 1_700_000_000,
    authorizations: [{ enterprise_id: null, team_id: TEAM, user_id: BOT_USER, is_bot: true, is_enterprise_install: false }],
    is_ext_shared_channel: fields.shared,
  });
  const response = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body });
  await t.server.turnQueue.drain();
  return { ts, status: response.status };
}

const followUpsBy = (subject: string) => t.db.collection("follow_ups").find({ "createdBy.subject": subject }).toArray();
const turnsAskedBy = (subject: string) => t.db.collection("turns").find({ "askedBy.subject": subject }).toArray();

describe("local server: Slack Connect users (issue 31)", () => {
  describe("POST /slack/events", () => {
    it("gives a host workspace user the host's default roles", async () => {
      await mention("U0HOST", { shared: true, userTeam: TEAM, sourceTeam: TEAM });
      expect(await followUpsBy("U0HOST")).toEqual([expect.objectContaining({ createdBy: { issuer: "slack", tenant: TEAM, subject: "U0HOST" } })]);
    });

    it("gives a user of another organisation in a shared channel none of the host's defaults: the tool is not offered", async () => {
      const { ts } = await mention("U0EVE", { shared: true, userTeam: GUEST_TEAM, sourceTeam: GUEST_TEAM });
      expect(await followUpsBy("U0EVE")).toEqual([]);
      expect(slackApi.posts.find((p) => p.threadTs === ts)?.text).toMatch(/^You asked/);
      // The writer is a principal of their own team; the thread stays the host's.
      const [turn] = await turnsAskedBy("U0EVE");
      expect(turn.askedBy).toEqual({ issuer: "slack", tenant: GUEST_TEAM, subject: "U0EVE" });
      const conversation = await t.db.collection("conversations").findOne({ "channel.key": `slack:${TEAM}:${SHARED}:${ts}` });
      expect(conversation?.owner).toEqual({ issuer: "slack", tenant: TEAM, subject: null });
    });

    it("gives a user of another organisation the roles configured for their own team", async () => {
      await mention("U0PEGGY", { shared: true, userTeam: PARTNER_TEAM });
      expect(await followUpsBy("U0PEGGY")).toEqual([expect.objectContaining({ createdBy: { issuer: "slack", tenant: PARTNER_TEAM, subject: "U0PEGGY" } })]);
    });

    it("takes the team the message came from (source_team) when the event names no user_team", async () => {
      await mention("U0MALLORY", { shared: true, sourceTeam: GUEST_TEAM });
      expect(await followUpsBy("U0MALLORY")).toEqual([]);
      expect((await turnsAskedBy("U0MALLORY"))[0].askedBy.tenant).toBe(GUEST_TEAM);
    });

    it("ignores a shared channel's message that names no team of its user, rather than take it for the host's", async () => {
      const { status } = await mention("U0NOBODY", { shared: true });
      expect(status).toBe(200);
      expect(await turnsAskedBy("U0NOBODY")).toEqual([]);
    });
  });
});
