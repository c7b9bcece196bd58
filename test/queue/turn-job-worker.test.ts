import { z } from "zod";
import { DEFAULT_MAX_MODEL_CALLS } from "../../lib/agent/turn-runner.js";
import { createApp, type App } from "../../lib/app.js";
import { ChannelReplier, SlackGroupDirectory, SlackReplier, slackTurnJob, slackWebClient } from "../../lib/channels/index.js";
import type { SlackTurnJob } from "../../lib/queue/index.js";
import { loadConfig } from "../../lib/config/config.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { silentLogger } from "../../lib/logger.js";
import { turnIdForJob, TurnJobWorker, type TurnJobWorkerOptions } from "../../lib/queue/index.js";
import { ChannelRoles } from "../../lib/auth/channel-roles.js";
import { resumeJobOf } from "../../lib/approvals/resume-job.js";
import { argsHash } from "../../lib/store/approval-store.js";
import type { Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ScriptedReply } from "../support/converse-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";

const BOT_TOKEN = "xoxb-worker-test";
const TEAM = "T0WORK";
const CHANNEL = "C0WORK";

/** The callers a tool saw, by turn. */
const seenCallers: Caller[] = [];
const whoAmI: ToolDefinition = {
  name: "who_am_i",
  description: "Names the person asking.",
  schema: z.object({}),
  sideEffects: false,
  run: async (_input, ctx) => {
    seenCallers.push(ctx.caller);
    return `you are ${ctx.caller.principal.subject}`;
  },
};

/** A call a person must approve: it says what it was run with. */
const sendNote: ToolDefinition = {
  name: "send_note",
  description: "Sends a note.",
  schema: z.object({ note: z.string() }),
  sideEffects: true,
  run: async ({ note }: { note: string }) => `sent ${note}`,
};

/** Model calls so far of each "busy for N calls" question. */
const busyCalls = new Map<string, number>();

/** What the scripted model answers, by a keyword in the question. */
function respond(text: string, toolResults: boolean): ScriptedReply {
  if (text.includes("loops forever")) return { toolUses: [{ name: "who_am_i", input: {} }] };
  if (text.includes("send two notes") && !toolResults) {
    return {
      toolUses: [
        { name: "send_note", input: { note: "first" } },
        { name: "send_note", input: { note: "second" } },
      ],
    };
  }
  if (text.includes("send a note")) return toolResults ? { text: "the note went out" } : { toolUses: [{ name: "send_note", input: { note: "draft" } }] };
  if (text.includes("who am i") && !toolResults) return { toolUses: [{ name: "who_am_i", input: {} }] };
  if (text.includes("refused")) return { error: { status: 400, type: "ValidationException", message: "The model rejected the request." } };
  if (text.includes("throttled")) return { error: { status: 429, type: "ThrottlingException", message: "Too many requests." } };
  const busyFor = /busy for (\d+) calls/.exec(text);
  if (busyFor) {
    const calls = (busyCalls.get(text) ?? 0) + 1;
    busyCalls.set(text, calls);
    if (calls <= Number(busyFor[1])) return { error: { status: 503, type: "ServiceUnavailableException", message: "The service is unavailable." } };
  }
  return { text: `answer to: ${text}` };
}

let converse: ConverseEndpoint;
let slackApi: SlackApiEndpoint;
const database = useTestDatabase("worker", { clearBeforeEach: false });
let app: App;

beforeAll(async () => {
  converse = await startConverseEndpoint({
    respond: (request) => {
      const last = request.messages[request.messages.length - 1];
      const toolResults = last.content.some((b) => "toolResult" in b);
      const question = request.messages.filter((m) => m.role === "user" && m.content.some((b) => "text" in b)).at(-1);
      return respond(question ? lastUserText({ ...request, messages: [question] }) : "", toolResults);
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM });
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, MODEL_PROVIDER: "bedrock" });
  config.tools.approvals = { tools: { send_note: { require: "always" } }, ttlSeconds: 600 };
  app = await createApp(config, {
    mongoClient: database.client,
    tools: [whoAmI, sendNote],
    logger: silentLogger,
  });
});

afterAll(async () => {
  await app?.close();
  await slackApi?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

function worker(options: Partial<TurnJobWorkerOptions> = {}): TurnJobWorker {
  return new TurnJobWorker({
    runner: app.runner,
    conversations: app.database.conversations,
    turns: app.database.turns,
    replier: new ChannelReplier({ slack: new SlackReplier({ botToken: BOT_TOKEN, slackApiUrl: slackApi.slackApiUrl, retries: 0 }) }),
    ...options,
  });
}

let eventCounter = 0;
/** A Slack app_mention's job in a thread of its own. */
function job(text: string): SlackTurnJob {
  eventCounter += 1;
  const ts = `1700002${String(eventCounter).padStart(3, "0")}.000100`;
  return slackTurnJob({ teamId: TEAM, userTeamId: TEAM, channelId: CHANNEL, userId: "U0ALICE", text, ts, threadTs: ts }, new Date());
}

const postsIn = (j: SlackTurnJob) => slackApi.posts.filter((p) => p.threadTs === j.replyTo.threadTs);

describe("TurnJobWorker", () => {
  describe("process", () => {
    it("returns completed and posts the answer in the job's thread", async () => {
      const j = job("what were sales?");
      expect(await worker().process(j, 1)).toMatchObject({ kind: "completed", result: { answer: "answer to: what were sales?" } });
      expect(postsIn(j)).toEqual([expect.objectContaining({ channel: CHANNEL, text: "answer to: what were sales?" })]);
    });

    it("runs tools as the person who wrote, in a conversation the workspace owns", async () => {
      const j = job("who am i?");
      await worker().process(j, 1);
      expect(seenCallers.at(-1)).toEqual({ principal: { issuer: "slack", tenant: TEAM, subject: "U0ALICE" }, roles: [] });
      const conversation = await app.database.conversations.collection.findOne({ "channel.key": j.conversationKey });
      expect(conversation?.owner).toEqual({ issuer: "slack", tenant: TEAM, subject: null });
    });

    it("runs tools with the roles configured for the person and their workspace", async () => {
      const roles = new ChannelRoles({ slack: { [TEAM]: { default: ["viewer"], users: { U0ALICE: ["analyst"] } } }, teams: {} });
      await worker({ roles }).process(job("who am i?"), 1);
      expect(seenCallers.at(-1)?.roles).toEqual(["analyst", "viewer"]);
    });

    it("returns retry, running nothing and saying nothing yet, while the person's group roles cannot be read", async () => {
      slackApi.failNextGroupList("ratelimited");
      const groups = new ChannelRoles(
        { slack: { [TEAM]: { groups: { S0ANALYSTS: ["analyst"] } } }, teams: {} },
        {
          slack: new SlackGroupDirectory(slackWebClient({ botToken: BOT_TOKEN, slackApiUrl: slackApi.slackApiUrl, retries: 0 })),
        },
      );
      const j = job("who am i?");
      const calls = seenCallers.length;
      expect(await worker({ roles: groups }).process(j, 1)).toMatchObject({ kind: "retry", error: { name: "RoleLookupError" } });
      expect(seenCallers.length).toBe(calls);
      expect(postsIn(j)).toEqual([]);
      expect(await worker({ roles: groups, maxReceives: 2 }).process(j, 2)).toMatchObject({ kind: "gave-up", error: { name: "RoleLookupError" } });
      expect(postsIn(j)).toEqual([expect.objectContaining({ text: expect.stringMatching(/couldn't reach a service/) })]);
    });

    it("returns already-replied and neither runs nor posts anything for a delivery after the reply", async () => {
      const j = job("asked once");
      await worker().process(j, 1);
      const modelCalls = converse.requests.length;
      expect(await worker().process(j, 2)).toEqual({ kind: "already-replied", turnId: turnIdForJob(j) });
      expect(postsIn(j)).toHaveLength(1);
      expect(converse.requests.length).toBe(modelCalls);
    });

    it("returns retry when Slack fails for now, and the next delivery posts the answer once without running the turn again", async () => {
      const j = job("post me later");
      slackApi.failNextPost("service_unavailable");
      expect(await worker({ random: () => 0 }).process(j, 1)).toMatchObject({ kind: "retry", delaySeconds: 10 });
      expect(postsIn(j)).toEqual([]);
      const modelCalls = converse.requests.length;
      expect(await worker().process(j, 2)).toMatchObject({ kind: "completed" });
      expect(postsIn(j).map((p) => p.text)).toEqual(["answer to: post me later"]);
      expect(converse.requests.length).toBe(modelCalls);
    });

    it("returns gave-up at once when Slack refuses the post for good", async () => {
      const j = job("nowhere to post");
      slackApi.failNextPost("channel_not_found");
      expect(await worker().process(j, 1)).toMatchObject({ kind: "gave-up", error: { name: "ChannelDeliveryError" } });
    });

    it("posts nothing while another delivery holds a fresh claim on the reply, and takes over a stale one", async () => {
      const turnsCollection = app.database.db.collection<{ _id: string }>(COLLECTIONS.turns);
      const j = job("claimed elsewhere");
      const turnId = turnIdForJob(j);
      await worker().process(j, 1);
      await turnsCollection.updateOne({ _id: turnId }, { $unset: { repliedAt: "" }, $set: { replyClaimedAt: new Date() } });
      const posts = postsIn(j).length;
      await worker().process(j, 2);
      expect(postsIn(j).length).toBe(posts);
      await turnsCollection.updateOne({ _id: turnId }, { $set: { replyClaimedAt: new Date(Date.now() - 10 * 60_000) } });
      await worker({ replyClaimMs: 60_000 }).process(j, 3);
      expect(postsIn(j).length).toBe(posts + 1);
    });

    it("returns gave-up on the first receive for a model 4xx, and tells the user once", async () => {
      const j = job("this gets refused");
      expect(await worker().process(j, 1)).toMatchObject({ kind: "gave-up", error: { name: "ModelCallFailedError", code: "model_invalid_request" } });
      expect(postsIn(j).map((p) => p.text)).toEqual(["Sorry, something went wrong and I couldn't answer this message. Please try again."]);
      expect(await worker().process(j, 2)).toMatchObject({ kind: "already-replied" });
      expect(postsIn(j)).toHaveLength(1);
    });

    it("returns gave-up on the first receive when the turn reaches its model-call cap, and tells the user once", async () => {
      const j = job("this loops forever");
      const modelCalls = converse.requests.length;
      expect(await worker().process(j, 1)).toMatchObject({ kind: "gave-up", error: { name: "ModelCallLimitError" } });
      expect(converse.requests.length - modelCalls).toBe(DEFAULT_MAX_MODEL_CALLS);
      expect(postsIn(j)).toHaveLength(1);
      expect(await app.database.turns.get(turnIdForJob(j))).toMatchObject({ status: "failed", error: { code: "model_call_limit" } });
    });

    it("returns retry, no sooner than Retry-After, for a throttled model once the receive's busy window is spent, and says once it will answer", async () => {
      const j = job("this gets throttled");
      const outcome = await worker({ maxReceives: 3, busyRetry: { windowMs: 0 } }).process(j, 1);
      expect(outcome).toMatchObject({ kind: "retry", error: { name: "ModelBusyError", code: "model_busy" } });
      expect(outcome.kind === "retry" && outcome.delaySeconds).toBeGreaterThanOrEqual(10);
      expect(postsIn(j).map((p) => p.text)).toEqual(["I'm busy right now and will answer in a moment."]);
      // Retried, the turn is not failed: it waits for the queue's next delivery.
      const retrying = await app.database.turns.get(turnIdForJob(j));
      expect(retrying).toMatchObject({ status: "queued" });
      expect(retrying?.error).toBeUndefined();
      expect((await app.database.turnEvents.after(turnIdForJob(j), 0)).map((e) => e.type)).not.toContain("failed");
      expect(await worker({ maxReceives: 2, busyRetry: { windowMs: 0 } }).process(j, 2)).toMatchObject({ kind: "gave-up" });
      expect(await app.database.turns.get(turnIdForJob(j))).toMatchObject({
        status: "failed",
        error: { code: "model_busy", message: "the turn failed: ThrottlingException (HTTP 429)" },
      });
      expect((await app.database.turnEvents.after(turnIdForJob(j), 0)).at(-1)).toMatchObject({ type: "failed", code: "model_busy" });
      expect(postsIn(j).map((p) => p.text)).toEqual([
        "I'm busy right now and will answer in a moment.",
        "I'm too busy to answer right now. Please send your message again in a few minutes.",
      ]);
    });

    it("tries a busy model again inside the receive, after a jittered backoff, and answers after saying once it will", async () => {
      const j = job("busy for 4 calls, then fine");
      const calls = converse.requests.length;
      const outcome = await worker({ busyRetry: { baseMs: 20 }, random: () => 0.5 }).process(j, 1);
      expect(outcome).toMatchObject({ kind: "completed", result: { answer: "answer to: busy for 4 calls, then fine" } });
      // The SDK makes three attempts of each call; the fourth busy answer is the worker's to retry.
      expect(converse.requests.length - calls).toBe(5);
      expect(postsIn(j).map((p) => p.text)).toEqual(["I'm busy right now and will answer in a moment.", "answer to: busy for 4 calls, then fine"]);
      expect(await app.database.turns.get(turnIdForJob(j))).toMatchObject({ status: "completed" });
    });

    it("hands a busy turn back to the queue without waiting when the worker's time left is under the reserve", async () => {
      const j = job("busy for 3 calls, reserve");
      const started = Date.now();
      const outcome = await worker({ busyRetry: { baseMs: 5_000 } }).process(j, 1, () => 30_000);
      expect(outcome).toMatchObject({ kind: "retry", error: { name: "ModelBusyError" } });
      expect(Date.now() - started).toBeLessThan(5_000);
    });

    it("returns gave-up and says the message is too long when it is over the limit, calling no model", async () => {
      const j = job("x".repeat(101));
      const modelCalls = converse.requests.length;
      expect(await worker({ maxMessageChars: 100 }).process(j, 1)).toMatchObject({ kind: "gave-up", error: { name: "PayloadTooLargeError" } });
      expect(postsIn(j).map((p) => p.text)).toEqual(["That message is too long for me (the limit is 100 characters). Please shorten it and send it again."]);
      expect(converse.requests.length).toBe(modelCalls);
      expect(await app.database.turns.get(turnIdForJob(j))).toMatchObject({ status: "failed" });
    });
  });

  describe("process of a resume job", () => {
    it("stores the edit a webhook handed over, runs the call with it, and completes under the turn's own question", async () => {
      const j = job("send a note to the team");
      const paused = await worker({ approvals: app.database.approvals }).process(j, 1);
      expect(paused.kind).toBe("awaiting-approval");
      const [approval] = await app.database.approvals.listByTurn(paused.turnId);
      // As a webhook decides where contents are sealed: the edit named by its hash, its arguments only in the job.
      const edited = { note: "final" };
      const decision = { kind: "edit", by: approval.requester, at: new Date(), argsHash: argsHash(edited) };
      await app.database.approvals.collection.updateOne({ _id: approval._id }, { $set: { status: "edited", decision: decision as never } });
      const resumed = resumeJobOf(approval, "edited-once", { [approval._id]: edited });
      expect(resumed.content).not.toContain("send a note");
      const done = await worker({ approvals: app.database.approvals }).process(resumed, 1);
      expect(done).toMatchObject({ kind: "completed", result: { answer: "the note went out" } });
      expect((await app.database.approvals.get(approval._id))?.decision).toMatchObject({ kind: "edit", args: edited });
      const effects = await app.database.turns.listCalls(paused.turnId);
      expect(JSON.stringify(effects)).toContain("sent final");
      const conversation = await app.database.conversations.collection.findOne({ "channel.key": j.conversationKey });
      expect(conversation?.title).toContain("send a note");
    });

    it("stores an edit handed over while another call of the turn still waits, and runs nothing", async () => {
      const j = job("send two notes to the team");
      const paused = await worker({ approvals: app.database.approvals }).process(j, 1);
      const [first, second] = await app.database.approvals.listByTurn(paused.turnId);
      expect(second.status).toBe("pending");
      const edited = { note: "first, edited" };
      const decision = { kind: "edit", by: first.requester, at: new Date(), argsHash: argsHash(edited) };
      await app.database.approvals.collection.updateOne({ _id: first._id }, { $set: { status: "edited", decision: decision as never } });
      const posts = postsIn(j).length;
      const outcome = await worker({ approvals: app.database.approvals }).process(resumeJobOf(first, "first-edited", { [first._id]: edited }), 1);
      expect(outcome).toEqual({ kind: "edits-recorded", turnId: paused.turnId });
      expect((await app.database.approvals.get(first._id))?.decision).toMatchObject({ args: edited });
      expect((await app.database.turns.get(paused.turnId))?.status).toBe("awaiting_approval");
      expect(postsIn(j).length).toBe(posts);
    });
  });

  describe("process of a job whose channel conversation was deleted", () => {
    async function deleteThreadConversation(j: SlackTurnJob): Promise<Date> {
      const conversation = await app.database.conversations.collection.findOne({ "channel.key": j.conversationKey });
      await app.database.deleteConversation(conversation?._id ?? "");
      return new Date();
    }

    it("returns gave-up with NotFoundError for a redelivery received before the deletion, and runs, posts and creates nothing", async () => {
      const j = job("asked before the deletion");
      await worker().process(j, 1);
      await deleteThreadConversation(j);
      const modelCalls = converse.requests.length;

      expect(await worker().process(j, 2)).toMatchObject({ kind: "gave-up", error: { name: "NotFoundError" } });
      expect(converse.requests.length).toBe(modelCalls);
      expect(postsIn(j)).toHaveLength(1);
      expect(await app.database.conversations.collection.countDocuments({ "channel.key": j.conversationKey })).toBe(0);
      expect(await app.database.turns.get(turnIdForJob(j))).toBeNull();
    });

    it("returns gave-up with NotFoundError for a job that waited in the queue while its thread's conversation was deleted", async () => {
      const first = job("the thread's first question");
      await worker().process(first, 1);
      const waiting = { ...job("queued before the deletion"), conversationKey: first.conversationKey, replyTo: first.replyTo };
      await deleteThreadConversation(first);

      expect(await worker().process(waiting, 1)).toMatchObject({ kind: "gave-up", error: { name: "NotFoundError" } });
      expect(await app.database.conversations.collection.countDocuments({ "channel.key": first.conversationKey })).toBe(0);
    });

    it("binds a message the thread receives after the deletion to a new conversation, and answers it", async () => {
      const first = job("before the deletion");
      await worker().process(first, 1);
      const deletedAt = await deleteThreadConversation(first);
      const later = {
        ...job("after the deletion"),
        conversationKey: first.conversationKey,
        replyTo: first.replyTo,
        receivedAt: new Date(deletedAt.getTime() + 1000).toISOString(),
      };

      expect(await worker().process(later, 1)).toMatchObject({ kind: "completed", result: { answer: "answer to: after the deletion" } });
      const record = await app.database.conversations.collection.find({ "channel.key": first.conversationKey }).toArray();
      expect(record).toHaveLength(1);
      expect((await app.database.messages.list(record[0]._id)).map((m) => m.content)).toEqual(["after the deletion", "answer to: after the deletion"]);
    });
  });
});
