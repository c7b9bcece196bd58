import {
  BotConnectorTokenProvider,
  ChannelEventDeduper,
  ChannelReplier,
  TeamsReplier,
  handleTeamsActivity,
  type ChannelRequest,
  type TeamsActivityOutcome,
} from "../../../lib/channels/index.js";
import { parseTurnJob, type TurnJob } from "../../../lib/queue/index.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../../support/bot-connector-endpoint.js";
import type { ChannelApprovals } from "../../../lib/channels/channel-decisions.js";
import { Gate } from "../../support/gate.js";
import { useStoreFixture } from "../../support/store-fixture.js";
import { TEST_APP_ID, startBotFrameworkIssuer, type BotFrameworkIssuer } from "../../support/teams-signing.js";
import { CHANNEL_THREAD, channelMention, messageActivity } from "./fixtures.js";

const APP_PASSWORD = "test-client-secret";

describe("teams/handle-teams-activity", () => {
  const { deduper } = useStoreFixture("teams_events", (db) => ({ deduper: new ChannelEventDeduper(db) })).stores;
  let issuer: BotFrameworkIssuer;
  let connector: BotConnectorEndpoint;
  let queue: string[];
  let outcomes: TeamsActivityOutcome[];

  beforeAll(async () => {
    issuer = await startBotFrameworkIssuer();
    connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD });
  });
  beforeEach(() => {
    connector.replies.splice(0);
    queue = [];
    outcomes = [];
  });
  afterAll(async () => {
    await issuer.close();
    await connector.close();
  });

  async function enqueue(job: TurnJob): Promise<void> {
    queue.push(JSON.stringify(job));
  }

  /** An activity as the Bot Framework posts it to the messaging endpoint. */
  async function signed(activity: Record<string, unknown>, token?: string): Promise<ChannelRequest> {
    const bearer = token ?? (await issuer.sign({ serviceUrl: String(activity.serviceUrl) }));
    return { headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" }, rawBody: JSON.stringify(activity) };
  }

  function deliver(request: ChannelRequest, options: { enqueue?: (job: TurnJob) => Promise<void> } = {}) {
    return handleTeamsActivity({
      request,
      appId: TEST_APP_ID,
      openIdMetadataUrl: issuer.openIdMetadataUrl,
      serviceUrlOrigin: connector.serviceUrl,
      deduper,
      enqueue: options.enqueue ?? enqueue,
      onOutcome: (o) => outcomes.push(o),
    });
  }

  describe("handleTeamsActivity", () => {
    it("returns 202 and enqueues an authenticated message", async () => {
      const response = await deliver(await signed(channelMention(connector.serviceUrl)));
      expect(response.status).toBe(202);
      expect(queue).toHaveLength(1);
      expect(parseTurnJob(queue[0])).toMatchObject({
        channel: "teams",
        content: "and the month before?",
        conversationKey: `teams:${CHANNEL_THREAD}`,
      });
    });

    it("returns 401 and enqueues nothing without a token", async () => {
      const response = await deliver({ headers: {}, rawBody: JSON.stringify(messageActivity(connector.serviceUrl)) });
      expect(response.status).toBe(401);
      expect(queue).toHaveLength(0);
      expect(outcomes).toEqual([{ kind: "rejected", reason: "missing" }]);
    });

    it("returns 401 and enqueues nothing for a forged token", async () => {
      const activity = messageActivity(connector.serviceUrl);
      const forged = await issuer.sign({ serviceUrl: connector.serviceUrl, foreignKey: true });
      expect((await deliver(await signed(activity, forged))).status).toBe(401);
      expect(queue).toHaveLength(0);
    });

    it("returns 401 when the activity was redirected to another serviceUrl than the token names", async () => {
      const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
      const response = await deliver(await signed(messageActivity("https://attacker.example/"), token));
      expect(response.status).toBe(401);
      expect(outcomes).toEqual([{ kind: "rejected", reason: "wrong_service_url" }]);
    });

    describe("identity (issue 31: an activity names its user only as Teams vouches)", () => {
      const LEAD_AAD = "6f0c0000-0000-4000-8000-0000000000c3";
      let webchatKeys: BotFrameworkIssuer;
      const decided: unknown[] = [];
      const approvals: ChannelApprovals = {
        decide: async (...args) => {
          decided.push(args);
          throw new Error("nothing may be decided here");
        },
        forDecision: async () => {
          throw new Error("nothing may be opened here");
        },
      };
      beforeAll(async () => {
        webchatKeys = await startBotFrameworkIssuer({ keys: [{ kid: "webchat-key", endorsements: ["webchat"] }] });
      });
      afterAll(async () => webchatKeys.close());

      function deliverWith(request: ChannelRequest, metadataUrl = issuer.openIdMetadataUrl) {
        return handleTeamsActivity({
          request,
          appId: TEST_APP_ID,
          openIdMetadataUrl: metadataUrl,
          serviceUrlOrigin: connector.serviceUrl,
          deduper,
          enqueue,
          approvals,
          onOutcome: (o) => outcomes.push(o),
        });
      }

      const approvalInvoke = (overrides: Record<string, unknown>) => ({
        ...messageActivity(connector.serviceUrl),
        type: "invoke",
        name: "adaptiveCard/action",
        text: undefined,
        value: { action: { verb: "threadwise.approval.approve", data: { conversationId: crypto.randomUUID(), approvalId: crypto.randomUUID() } } },
        ...overrides,
      });

      it("returns 401 for a card action from Web Chat signed by a key that endorses webchat, naming a lead's object id as from.id", async () => {
        const forged = approvalInvoke({
          channelId: "webchat",
          from: { id: LEAD_AAD, name: "Lead" },
          conversation: { id: "webchat-conv" },
          channelData: undefined,
        });
        const token = await webchatKeys.sign({ serviceUrl: connector.serviceUrl });
        const response = await deliverWith(await signed(forged, token), webchatKeys.openIdMetadataUrl);
        expect(response.status).toBe(401);
        expect(outcomes).toEqual([{ kind: "rejected", reason: "wrong_channel" }]);
        expect(decided).toEqual([]);
      });

      it("returns 401 for a Teams card action or message without an Entra object id, deciding and enqueuing nothing", async () => {
        const noAad = { from: { id: LEAD_AAD, name: "Lead" } };
        expect((await deliverWith(await signed(approvalInvoke(noAad)))).status).toBe(401);
        expect((await deliverWith(await signed(messageActivity(connector.serviceUrl, noAad)))).status).toBe(401);
        expect(outcomes).toEqual([
          { kind: "rejected", reason: "no_identity" },
          { kind: "rejected", reason: "no_identity" },
        ]);
        expect(decided).toEqual([]);
        expect(queue).toHaveLength(0);
      });

      it("returns 401 for a message without a tenant, or from another tenant than its conversation's", async () => {
        expect((await deliverWith(await signed(messageActivity(connector.serviceUrl, { channelData: {} })))).status).toBe(401);
        const otherTenant = messageActivity(connector.serviceUrl, {
          conversation: { conversationType: "channel", tenantId: "guest-tenant", id: "19:x@thread.tacv2" },
        });
        expect((await deliverWith(await signed(otherTenant))).status).toBe(401);
        expect(queue).toHaveLength(0);
      });

      it("returns 401 for a message whose signed serviceUrl is no Teams Bot Connector", async () => {
        const serviceUrl = "https://directline.botframework.com/";
        const response = await deliverWith(await signed(messageActivity(serviceUrl), await issuer.sign({ serviceUrl })));
        expect(response.status).toBe(401);
        expect(outcomes).toEqual([{ kind: "rejected", reason: "wrong_service_url" }]);
      });
    });

    it("returns 200 and enqueues nothing for a conversationUpdate", async () => {
      const response = await deliver(await signed(messageActivity(connector.serviceUrl, { type: "conversationUpdate", text: undefined })));
      expect(response.status).toBe(200);
      expect(queue).toHaveLength(0);
      expect(outcomes).toEqual([{ kind: "ignored", reason: "not_message" }]);
    });

    it("enqueues one turn for an activity delivered twice", async () => {
      const activity = messageActivity(connector.serviceUrl);
      const first = await deliver(await signed(activity));
      const again = await deliver(await signed(activity));
      expect([first.status, again.status]).toEqual([202, 200]);
      expect(queue).toHaveLength(1);
      expect(outcomes).toEqual([{ kind: "enqueued" }, { kind: "duplicate" }]);
    });

    it("answers 503 to a redelivery while the first delivery is still enqueueing, and 202 to one after that delivery failed", async () => {
      const gate = new Gate();
      const activity = messageActivity(connector.serviceUrl);
      const first = deliver(await signed(activity), {
        enqueue: async () => {
          await gate.pass();
          throw new Error("queue timed out");
        },
      });
      await gate.reached;
      const again = await deliver(await signed(activity));
      gate.open();
      await expect(first).rejects.toThrow("queue timed out");
      const last = await deliver(await signed(activity));
      expect([again.status, last.status]).toEqual([503, 202]);
      expect(queue).toHaveLength(1);
      expect(outcomes).toEqual([{ kind: "in_flight" }, { kind: "enqueued" }]);
    });

    it("returns 400 for a body that is not JSON", async () => {
      expect((await deliver({ headers: {}, rawBody: "<xml/>" })).status).toBe(400);
    });
  });

  describe("handleTeamsActivity with the worker's replier", () => {
    async function drain(answer: (job: TurnJob) => Promise<string>): Promise<void> {
      const tokens = new BotConnectorTokenProvider({ appId: TEST_APP_ID, appPassword: APP_PASSWORD, tokenUrl: connector.tokenUrl });
      const replier = new ChannelReplier({ teams: new TeamsReplier({ tokens }) });
      for (const body of queue.splice(0)) {
        const job = parseTurnJob(body);
        try {
          await replier.reply(job, await answer(job));
        } catch (error) {
          await replier.replyFailure(job, error);
        }
      }
    }

    it("replies once, to the activity in its conversation, for an activity delivered twice", async () => {
      const activity = channelMention(connector.serviceUrl, { id: "1700000000555" });
      await deliver(await signed(activity));
      await deliver(await signed(activity));
      await drain(async (job) => `You asked: ${job.content}`);
      expect(connector.replies).toHaveLength(1);
      expect(connector.replies[0]).toMatchObject({
        conversationId: CHANNEL_THREAD,
        activityId: "1700000000555",
        activity: { text: "You asked: and the month before?", replyToId: "1700000000555" },
      });
    });

    it("replies with a short failure message when the turn fails", async () => {
      await deliver(await signed(messageActivity(connector.serviceUrl, { id: "1700000000666" })));
      await drain(async () => {
        throw new Error("checkpoint write failed: E11000");
      });
      expect(connector.replies).toHaveLength(1);
      expect(connector.replies[0].activityId).toBe("1700000000666");
      expect(String(connector.replies[0].activity.text)).toMatch(/^Sorry, something went wrong/);
      expect(String(connector.replies[0].activity.text)).not.toContain("E11000");
    });
  });
});
