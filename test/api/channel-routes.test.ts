import { channelRoutes, createRouter } from "../../lib/api/index.js";
import { ChannelEventDeduper, channelHandlers } from "../../lib/channels/index.js";
import type { TurnJob } from "../../lib/queue/index.js";
import { useStoreFixture } from "../support/store-fixture.js";
import { TEST_SLACK_SIGNING_SECRET, signSlackRequest } from "../support/slack-signing.js";
import { TEST_APP_ID, startBotFrameworkIssuer, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { appMention, envelope } from "../channels/slack/fixtures.js";
import { messageActivity } from "../channels/teams/fixtures.js";

describe("channel-routes", () => {
  const { deduper } = useStoreFixture("channel_routes", (db) => ({ deduper: new ChannelEventDeduper(db) })).stores;
  let issuer: BotFrameworkIssuer;
  const queue: TurnJob[] = [];

  beforeAll(async () => {
    issuer = await startBotFrameworkIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  function router(which: { slack?: boolean; teams?: boolean }) {
    return createRouter(
      channelRoutes(
        channelHandlers({
          slack: which.slack ? { signingSecret: TEST_SLACK_SIGNING_SECRET } : undefined,
          teams: which.teams ? { appId: TEST_APP_ID, openIdMetadataUrl: issuer.openIdMetadataUrl } : undefined,
          deduper,
          enqueue: async (job) => void queue.push(job),
        }),
      ),
    );
  }

  describe("channelRoutes over channelHandlers", () => {
    it("serves POST /slack/events from the router's raw body", async () => {
      const body = envelope(appMention());
      const response = await router({ slack: true })({ method: "POST", path: "/slack/events", headers: signSlackRequest(body), query: {}, body });
      expect(response.status).toBe(200);
      expect(queue.at(-1)?.channel).toBe("slack");
    });

    it("serves POST /teams/messages from the router's raw body", async () => {
      const activity = messageActivity("https://smba.trafficmanager.net/emea/");
      const token = await issuer.sign({ serviceUrl: "https://smba.trafficmanager.net/emea/" });
      const response = await router({ teams: true })({
        method: "POST",
        path: "/teams/messages",
        headers: { authorization: `Bearer ${token}` },
        query: {},
        body: JSON.stringify(activity),
      });
      expect(response.status).toBe(202);
      expect(queue.at(-1)?.channel).toBe("teams");
    });

    it("answers 413 for a body over the API's limit before verifying or parsing it, and enqueues nothing", async () => {
      const queued = queue.length;
      const nested = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
      const slackBody = envelope(appMention({ text: "x".repeat(300_000) }));
      const slack = await router({ slack: true })({ method: "POST", path: "/slack/events", headers: signSlackRequest(slackBody), query: {}, body: slackBody });
      const token = await issuer.sign({ serviceUrl: "https://smba.trafficmanager.net/emea/" });
      const teams = await router({ teams: true })({
        method: "POST",
        path: "/teams/messages",
        headers: { authorization: `Bearer ${token}` },
        query: {},
        body: nested,
      });
      expect([slack.status, teams.status]).toEqual([413, 413]);
      expect(queue.length).toBe(queued);
    });

    it("returns no Teams route when Teams is not configured", async () => {
      const response = await router({ slack: true })({ method: "POST", path: "/teams/messages", headers: {}, query: {}, body: "{}" });
      expect(response.status).toBe(404);
    });

    it("returns 503 channel_not_configured with the hint for a channel without its key, when asked to", async () => {
      const route = createRouter(
        channelRoutes(
          channelHandlers({
            slack: { signingSecret: TEST_SLACK_SIGNING_SECRET },
            notConfigured: { slack: "set the slack key", teams: "set the teams key" },
            deduper,
            enqueue: async () => undefined,
          }),
        ),
      );
      const response = await route({ method: "POST", path: "/teams/messages", headers: {}, query: {}, body: "{}" });
      expect(response.status).toBe(503);
      expect(JSON.parse(response.body).error).toEqual({ code: "channel_not_configured", message: "teams is not configured: set the teams key" });
    });

    it("returns 401 for an unsigned Slack request without claiming its event", async () => {
      const body = envelope(appMention());
      const eventId = (JSON.parse(body) as { event_id: string }).event_id;
      const response = await router({ slack: true })({ method: "POST", path: "/slack/events", headers: {}, query: {}, body });
      expect(response.status).toBe(401);
      expect(await deduper.collection.countDocuments({ _id: `slack:${eventId}` })).toBe(0);
    });

    it("returns 405 for GET on the Slack route", async () => {
      const response = await router({ slack: true })({ method: "GET", path: "/slack/events", headers: {}, query: {} });
      expect(response.status).toBe(405);
    });
  });
});
