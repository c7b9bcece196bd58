import { randomUUID } from "node:crypto";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import type { DecisionResult } from "../../lib/approvals/approvals.js";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { APPROVAL_FAULT_POINTS, type FaultInjector } from "../../lib/agent/fault-points.js";
import { crashOnceAt, SimulatedCrash } from "../support/crash.js";
import type { App } from "../../lib/app.js";
import { turnIdForJob, type TurnQueue } from "../../lib/queue/turn-queue.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import type { ToolApprovalPolicy } from "../../lib/config/approvals-config.js";
import {
  ApprovalConflictError,
  ApprovalExpiredError,
  ApprovalSupersededError,
  ForbiddenError,
  NotFoundError,
  TurnSupersededError,
  ValidationError,
} from "../../lib/errors.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { apiTurnJob } from "../../lib/queue/turn-dispatcher.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import type { TurnEvent } from "../../lib/events/turn-event-types.js";
import { TurnEventFollower } from "../../lib/events/turn-event-follower.js";
import { useTestApp, type AppFixture } from "../support/app-fixture.js";

const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
const bob: Caller = { principal: apiPrincipal("bob"), roles: [] };
const manager: Caller = { principal: apiPrincipal("mia"), roles: ["manager"] };

const testApp = useTestApp("approvals", { clearBeforeEach: false });
const { database } = testApp;
/** What an app is made with beside its policy: another database (a sweep sees every conversation of its own), a turn queue. */
interface AppOptions {
  db: AppFixture;
  turnQueue: TurnQueue;
}

/** A tool that changes things, and one that does not: every effect is one document the test counts. */
function tools(): ToolDefinition[] {
  return [
    {
      name: "record_effect",
      description: "Records an effect.",
      schema: z.object({ note: z.string().min(1), amount: z.number().optional() }),
      sideEffects: true,
      run: async ({ note }: { note: string }, ctx) => {
        await database.db.collection("follow_ups").insertOne({ conversationId: ctx.conversationId, note });
        return `recorded ${note}`;
      },
    },
    {
      name: "look_up",
      description: "Reads something.",
      schema: z.object({ key: z.string() }),
      sideEffects: false,
      run: async ({ key }: { key: string }) => `value of ${key}`,
    },
  ];
}

async function appWith(policy: ToolApprovalPolicy = { require: "always" }, faults?: FaultInjector, options: Partial<AppOptions> = {}): Promise<App> {
  return (options.db ?? testApp).appWith({ tools: tools(), faults, turnQueue: options.turnQueue }, (config) => {
    config.tools.approvals = { tools: { record_effect: policy }, ttlSeconds: 600 };
  });
}

const effects = (conversationId: string) => database.db.collection("follow_ups").find({ conversationId }).toArray();

async function pausedTurn(app: App, caller: Caller = alice, content = 'record_effect {"note": "ship it"}') {
  const { _id: conversationId } = await app.database.conversations.create(caller.principal);
  const turnId = randomUUID();
  const plain = { conversationId, caller, content, turnId };
  // As the API's entry point runs it: with the job that resumes it.
  const request = { ...plain, origin: apiTurnJob(plain) };
  const result = await app.runner.run(request);
  const approvalId = result.approvals?.[0]?.approvalId ?? "";
  return { conversationId, turnId, request, result, approvalId };
}

/** An app whose turn queue only records jobs (as SQS in AWS: the worker is elsewhere), so what is handed on can be counted. */
async function queuedApp(faults?: FaultInjector, db?: AppFixture) {
  const jobs: TurnJob[] = [];
  const app = await appWith({ require: "always" }, faults, { turnQueue: { enqueue: async (job) => void jobs.push(job) }, ...(db && { db }) });
  return { app, jobs };
}

/** A second call of the same model response waiting beside the first (as parallel calls are recorded), due in an hour. */
async function pendingSibling(app: App, approvalId: string): Promise<string> {
  const first = await app.database.approvals.get(approvalId);
  const _id = randomUUID();
  await app.database.approvals.collection.insertOne({ ...first!, _id, toolCallId: `sibling-${_id}`, deadline: new Date(Date.now() + 3_600_000) });
  return _id;
}

async function stateOf(app: App, conversationId: string): Promise<BaseMessage[]> {
  const snapshot = await app.runner.readThread(conversationId);
  expect(snapshot.length).toBeGreaterThan(0);
  const state = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId } });
  return state?.checkpoint.channel_values.messages as BaseMessage[];
}

describe("Approvals", () => {
  describe("a turn that calls a held tool", () => {
    it("returns awaiting_approval with one pending approval and runs nothing", async () => {
      const app = await appWith();
      const { conversationId, turnId, result, approvalId } = await pausedTurn(app);

      expect(result).toMatchObject({ status: "awaiting_approval", answer: "" });
      expect(result.approvals).toHaveLength(1);
      expect(await effects(conversationId)).toHaveLength(0);
      expect((await app.database.turns.get(turnId))?.status).toBe("awaiting_approval");
      const [approval] = await app.approvals.list(conversationId);
      expect(approval).toMatchObject({ _id: approvalId, turnId, tool: "record_effect", args: { note: "ship it" }, status: "pending" });
      expect(approval.requester).toEqual(alice.principal);
      expect(approval.argsHash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.parse(approval.argsSchema ?? "")).toEqual(app.tools.argumentsSchema("record_effect"));
    });

    it("runs a read-only tool at once", async () => {
      const app = await appWith();
      const { conversationId, result } = await pausedTurn(app, alice, 'look_up {"key": "k"}');
      expect(result.status).toBe("completed");
      expect(result.answer).toContain("value of k");
      expect(await app.approvals.list(conversationId)).toEqual([]);
    });

    it("runs at once when the policy's rule does not match the arguments", async () => {
      const app = await appWith({ require: { when: { argument: "amount", atLeast: 100 } } });
      const small = await pausedTurn(app, alice, 'record_effect {"note": "small", "amount": 5}');
      expect(small.result.status).toBe("completed");
      const large = await pausedTurn(app, alice, 'record_effect {"note": "large", "amount": 500}');
      expect(large.result.status).toBe("awaiting_approval");
    });

    it("returns the same approvals when the paused turn is run again, without a second record", async () => {
      const app = await appWith();
      const { request, approvalId } = await pausedTurn(app);
      const again = await app.runner.run(request);
      expect(again.status).toBe("awaiting_approval");
      expect(again.approvals?.map((a) => a.approvalId)).toEqual([approvalId]);
      expect(await app.database.approvals.listByTurn(request.turnId)).toHaveLength(1);
    });
  });

  describe("decide", () => {
    it("runs the call once after approval and completes the turn", async () => {
      const app = await appWith();
      const { conversationId, turnId, approvalId } = await pausedTurn(app);

      const decision = await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });

      expect(decision).toMatchObject({ decided: true, resumed: true, approval: { status: "approved" } });
      expect(await effects(conversationId)).toHaveLength(1);
      const turn = await app.database.turns.get(turnId);
      expect(turn).toMatchObject({ status: "completed" });
      expect(turn?.answer).toContain("recorded ship it");
    });

    it("does not run a rejected call, and the model reads the reason", async () => {
      const app = await appWith();
      const { conversationId, turnId, approvalId } = await pausedTurn(app);

      await app.approvals.decide(conversationId, approvalId, alice, { kind: "reject", reason: "not this quarter" });

      expect(await effects(conversationId)).toHaveLength(0);
      const turn = await app.database.turns.get(turnId);
      expect(turn?.status).toBe("completed");
      expect(turn?.answer).toContain("not this quarter");
      const tool = (await stateOf(app, conversationId)).find((m) => m.getType() === "tool");
      expect(tool?.content).toContain("alice rejected this call, saying: not this quarter");
    });

    it("runs the edited call, and the model's message shows the edited arguments", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);

      await app.approvals.decide(conversationId, approvalId, alice, { kind: "edit", args: { note: "ship it on Monday" } });

      expect((await effects(conversationId)).map((e) => e.note)).toEqual(["ship it on Monday"]);
      const messages = await stateOf(app, conversationId);
      const calls = messages.filter((m) => m.getType() === "ai").flatMap((m) => (m as AIMessage).tool_calls ?? []);
      expect(calls.map((c) => c.args)).toEqual([{ note: "ship it on Monday" }]);
    });

    it("throws a ValidationError for edited arguments the tool refuses, and changes nothing", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);
      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "edit", args: { note: 7 } })).rejects.toThrow(ValidationError);
      expect((await app.database.approvals.get(approvalId))?.status).toBe("pending");
    });

    it("throws a ValidationError for any edit of an approval opened without its arguments' schema, and approves it still", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);
      await app.database.approvals.collection.updateOne({ _id: approvalId }, { $unset: { argsSchema: "" } });
      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "edit", args: { note: "fine" } })).rejects.toThrow(ValidationError);
      await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });
      expect(await effects(conversationId)).toHaveLength(1);
    });

    it("returns the first decision when the same one is repeated, and runs the call once", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);
      await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });
      const again = await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });
      expect(again).toMatchObject({ decided: false, resumed: false, approval: { status: "approved" } });
      expect(await effects(conversationId)).toHaveLength(1);
    });

    it("throws ApprovalConflictError on a conflicting second decision, and the first stands", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);
      await app.approvals.decide(conversationId, approvalId, alice, { kind: "reject" });
      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).rejects.toThrow(ApprovalConflictError);
      expect((await app.database.approvals.get(approvalId))?.status).toBe("rejected");
      expect(await effects(conversationId)).toHaveLength(0);
    });

    it("throws ApprovalExpiredError after the deadline, and the turn goes on with the model told it expired", async () => {
      const app = await appWith();
      const { conversationId, turnId, approvalId } = await pausedTurn(app);
      await app.database.approvals.collection.updateOne({ _id: approvalId }, { $set: { deadline: new Date(Date.now() - 1000) } });

      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).rejects.toThrow(ApprovalExpiredError);

      expect((await app.database.approvals.get(approvalId))?.status).toBe("expired");
      const turn = await app.database.turns.get(turnId);
      expect(turn?.status).toBe("completed");
      expect(turn?.answer).toContain("expired");
      expect(await effects(conversationId)).toHaveLength(0);
    });
  });

  describe("get", () => {
    it("throws NotFoundError naming the approval for an id of another conversation, and for an unknown id", async () => {
      const app = await appWith();
      const { approvalId } = await pausedTurn(app);
      const other = await app.database.conversations.create(alice.principal);
      await expect(app.approvals.get(other._id, approvalId)).rejects.toThrow(new NotFoundError(`approval ${approvalId} not found`));
      const unknown = randomUUID();
      await expect(app.approvals.get(other._id, unknown)).rejects.toThrow(new NotFoundError(`approval ${unknown} not found`));
    });
  });

  describe("decide, with the turn handed to a queue", () => {
    it("throws ForbiddenError naming the approval for a caller who is not an approver", async () => {
      const { app } = await queuedApp();
      const { conversationId, approvalId } = await pausedTurn(app);
      await expect(app.approvals.decide(conversationId, approvalId, bob, { kind: "approve" })).rejects.toThrow(
        new ForbiddenError(`you may not decide approval ${approvalId}`),
      );
    });

    it("throws a ValidationError with each problem under `args.`", async () => {
      const { app } = await queuedApp();
      const { conversationId, approvalId } = await pausedTurn(app);
      const refused = app.approvals.decide(conversationId, approvalId, alice, { kind: "edit", args: { note: "", amount: "x" } });
      await expect(refused).rejects.toMatchObject({
        message: "the edited arguments are not valid for record_effect",
        details: [
          { path: "args.note", message: expect.stringContaining(">=1") },
          { path: "args.amount", message: expect.stringContaining("expected number") },
        ],
      });
    });

    it("hands the turn on once, under a 32-hex key naming the decisions, when its last call is decided", async () => {
      const { app, jobs } = await queuedApp();
      const { conversationId, approvalId } = await pausedTurn(app);
      expect(await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).toMatchObject({ decided: true, resumed: true });
      expect(jobs).toHaveLength(1);
      expect(jobs[0].resume).toMatch(/^[0-9a-f]{32}$/);
    });

    it("does not hand the turn on while another call of it waits", async () => {
      const { app, jobs } = await queuedApp();
      const { conversationId, approvalId } = await pausedTurn(app);
      const sibling = await pendingSibling(app, approvalId);
      expect(await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).toMatchObject({ decided: true, resumed: false });
      expect(jobs).toHaveLength(0);
      expect(await app.approvals.decide(conversationId, sibling, alice, { kind: "reject" })).toMatchObject({ resumed: true });
      expect(jobs).toHaveLength(1);
    });

    it("gives the turns of different decisions different keys, and one set of decisions the same key on every look", async () => {
      const { app, jobs } = await queuedApp();
      const first = await pausedTurn(app);
      const second = await pausedTurn(app);
      await app.approvals.decide(first.conversationId, first.approvalId, alice, { kind: "approve" });
      await app.approvals.decide(second.conversationId, second.approvalId, alice, { kind: "approve" });
      // Past its deadline, the decided call still counts as decided: a second look hands the turn on under the same key.
      await app.database.approvals.collection.updateOne({ _id: first.approvalId }, { $set: { deadline: new Date(Date.now() - 1000) } });
      await app.approvals.list(first.conversationId);
      expect(jobs.map((j) => j.conversationKey)).toEqual([first.conversationId, second.conversationId, first.conversationId]);
      expect(jobs[2].resume).toBe(jobs[0].resume);
      expect(jobs[1].resume).not.toBe(jobs[0].resume);
    });

    it("does not hand the turn on again for a conflicting decision", async () => {
      const { app, jobs } = await queuedApp();
      const { conversationId, approvalId } = await pausedTurn(app);
      await app.approvals.decide(conversationId, approvalId, alice, { kind: "reject" });
      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).rejects.toThrow(ApprovalConflictError);
      expect(jobs).toHaveLength(1);
    });
  });

  describe("list, with the turn handed to a queue", () => {
    it("hands on nothing while the turn's call waits before its deadline", async () => {
      const { app, jobs } = await queuedApp();
      const { conversationId, approvalId } = await pausedTurn(app);
      expect((await app.approvals.list(conversationId)).map((a) => a.status)).toEqual(["pending"]);
      expect(jobs).toHaveLength(0);
      expect((await app.database.approvals.get(approvalId))?.status).toBe("pending");
    });

    it("hands on a turn whose decision a crash left before its hand-over", async () => {
      const { app, jobs } = await queuedApp(crashOnceAt("after-decision"));
      const { conversationId, approvalId } = await pausedTurn(app);
      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).rejects.toThrow(SimulatedCrash);
      expect(jobs).toHaveLength(0);
      await app.approvals.list(conversationId);
      expect(jobs.map((j) => j.conversationKey)).toEqual([conversationId]);
    });

    it("hands on nothing for a waiting turn whose approvals are not recorded", async () => {
      const { app, jobs } = await queuedApp();
      const { conversationId, turnId } = await pausedTurn(app);
      await app.database.approvals.collection.deleteMany({ turnId });
      expect(await app.approvals.list(conversationId)).toEqual([]);
      expect(jobs).toHaveLength(0);
    });

    it("expires the overdue approvals of its own conversation only", async () => {
      const { app } = await queuedApp();
      const mine = await pausedTurn(app);
      const other = await pausedTurn(app);
      const past = new Date(Date.now() - 1000);
      await app.database.approvals.collection.updateMany({ _id: { $in: [mine.approvalId, other.approvalId] } }, { $set: { deadline: past } });
      expect((await app.approvals.list(mine.conversationId)).map((a) => a.status)).toEqual(["expired"]);
      expect((await app.database.approvals.get(other.approvalId))?.status).toBe("pending");
    });
  });

  describe("list", () => {
    it("rejects overdue approvals as expired and resumes their turn without the call", async () => {
      const app = await appWith();
      const { conversationId, turnId, approvalId } = await pausedTurn(app);
      await app.database.approvals.collection.updateOne({ _id: approvalId }, { $set: { deadline: new Date(Date.now() - 1000) } });

      const [approval] = await app.approvals.list(conversationId);

      expect(approval).toMatchObject({ status: "expired", decision: { kind: "expire" } });
      expect((await app.database.turns.get(turnId))?.status).toBe("completed");
      expect(await effects(conversationId)).toHaveLength(0);
    });
  });

  describe("sweep", () => {
    // The sweep looks at every conversation of its database: this block has its own, emptied before each test.
    const own = useTestApp("approvals_sweep");
    const sweepApp = (options: Partial<AppOptions> = {}, faults?: FaultInjector) => appWith({ require: "always" }, faults, { db: own, ...options });

    /** Moves the approval's deadline into the past by `agoMs` (the runner that resumes its turn reads the real clock). */
    async function overdue(app: App, approvalId: string, agoMs = 1000): Promise<Date> {
      const deadline = new Date(Date.now() - agoMs);
      await app.database.approvals.collection.updateOne({ _id: approvalId }, { $set: { deadline } });
      return deadline;
    }

    it("returns nothing to do and leaves an approval pending before its deadline", async () => {
      const app = await sweepApp();
      const { approvalId } = await pausedTurn(app);
      const deadline = await overdue(app, approvalId);

      const result = await app.approvals.sweep({ now: new Date(deadline.getTime() - 1) });

      expect(result).toEqual({ expired: 0, resumed: 0, more: false });
      expect((await app.database.approvals.get(approvalId))?.status).toBe("pending");
    });

    it("expires an overdue approval nobody looked at and resumes its turn with the model told why", async () => {
      const app = await sweepApp();
      const { conversationId, turnId, approvalId } = await pausedTurn(app);
      const deadline = await overdue(app, approvalId);

      const result = await app.approvals.sweep({ now: deadline });

      // Without a queue the turn resumes in the sweep, and its runner marks the approval expired first.
      expect(result).toEqual({ expired: 0, resumed: 1, more: false });
      expect(await app.database.approvals.get(approvalId)).toMatchObject({ status: "expired", decision: { kind: "expire" } });
      const turn = await app.database.turns.get(turnId);
      expect(turn?.status).toBe("completed");
      expect(turn?.answer).toContain("expired");
      expect(await effects(conversationId)).toHaveLength(0);
    });

    it("returns nothing to do when run again", async () => {
      const app = await sweepApp();
      const { approvalId } = await pausedTurn(app);
      const deadline = await overdue(app, approvalId);
      await app.approvals.sweep({ now: deadline });

      expect(await app.approvals.sweep({ now: deadline })).toEqual({ expired: 0, resumed: 0, more: false });
    });

    it("takes at most `limit` approvals a run, most overdue first, and says more are left", async () => {
      const app = await sweepApp();
      const paused = [await pausedTurn(app), await pausedTurn(app), await pausedTurn(app)];
      const deadlines = [];
      for (const [i, p] of paused.entries()) deadlines.push(await overdue(app, p.approvalId, 1000 * (3 - i)));
      const status = async () => Promise.all(paused.map(async (p) => (await app.database.approvals.get(p.approvalId))?.status));

      const first = await app.approvals.sweep({ now: deadlines[2], limit: 2 });

      expect(first.more).toBe(true);
      expect(first.resumed).toBe(2);
      expect(await status()).toEqual(["expired", "expired", "pending"]);
      await app.approvals.sweep({ now: deadlines[2], limit: 2 });
      expect(await status()).toEqual(["expired", "expired", "expired"]);
    });

    it("says no more are left when exactly `limit` approvals are overdue", async () => {
      const app = await sweepApp();
      const paused = [await pausedTurn(app), await pausedTurn(app)];
      const deadlines = [];
      for (const p of paused) deadlines.push(await overdue(app, p.approvalId));
      expect(await app.approvals.sweep({ now: new Date(Math.max(...deadlines.map(Number))), limit: 2 })).toMatchObject({ resumed: 2, more: false });
    });

    it("expires an overdue approval whose turn is gone, and resumes nothing", async () => {
      const app = await sweepApp();
      const { turnId, approvalId } = await pausedTurn(app);
      const deadline = await overdue(app, approvalId);
      await app.database.db.collection("turns").deleteOne({ _id: turnId as never });
      expect(await app.approvals.sweep({ now: deadline })).toEqual({ expired: 1, resumed: 0, more: false });
    });

    it("expires the overdue approvals of a turn that no longer waits, so they do not hold up later runs", async () => {
      const app = await sweepApp();
      const { turnId, approvalId } = await pausedTurn(app);
      const deadline = await overdue(app, approvalId);
      await app.database.db.collection("turns").updateOne({ _id: turnId as never }, { $set: { status: "failed" } });

      expect(await app.approvals.sweep({ now: deadline })).toEqual({ expired: 1, resumed: 0, more: false });
      expect((await app.database.approvals.get(approvalId))?.status).toBe("expired");
    });

    it("lets a person's approval taken while it runs stand: the call runs once and nothing is expired", async () => {
      const app = await sweepApp();
      const { conversationId, approvalId } = await pausedTurn(app);
      const approval = await app.database.approvals.get(approvalId);
      const store = app.database.approvals;
      const select = store.overdue.bind(store);
      // The person decides between the sweep's look-up and its writes; the sweep's clock is already past the deadline.
      store.overdue = async (now, limit) => {
        const due = await select(now, limit);
        await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });
        return due;
      };

      const result = await app.approvals.sweep({ now: approval!.deadline });

      expect(result).toEqual({ expired: 0, resumed: 0, more: false });
      expect((await store.get(approvalId))?.status).toBe("approved");
      expect(await effects(conversationId)).toHaveLength(1);
    });

    it("leaves the approval due after a crash once its turn was handed on, and the next run resumes it once", async () => {
      const faults = crashOnceAt("after-resume-enqueued");
      const jobs: TurnJob[] = [];
      // As SQS in AWS: the job waits for the worker; the sweep only hands it on.
      const app = await sweepApp({ turnQueue: { enqueue: async (job) => void jobs.push(job) } }, faults);
      const { approvalId } = await pausedTurn(app);
      const deadline = await overdue(app, approvalId);

      await expect(app.approvals.sweep({ now: deadline })).rejects.toThrow(SimulatedCrash);
      expect((await app.database.approvals.get(approvalId))?.status).toBe("pending");
      expect(await app.approvals.sweep({ now: deadline })).toEqual({ expired: 1, resumed: 1, more: false });

      expect((await app.database.approvals.get(approvalId))?.status).toBe("expired");
      // The same decisions, the same key: SQS keeps one of the two jobs.
      expect(jobs).toHaveLength(2);
      expect(jobs[1]).toEqual(jobs[0]);
    });
  });

  describe("a paused turn's events", () => {
    async function collect(events: AsyncIterable<TurnEvent>): Promise<TurnEvent[]> {
      const seen: TurnEvent[] = [];
      for await (const event of events) seen.push(event);
      return seen;
    }

    const follower = (app: App) => new TurnEventFollower({ store: app.database.turnEvents, turns: app.database.turns, hub: app.events.hub });

    it("returns approval_requested naming the waiting call as the stream's last event, and the resumed turn's events after it", async () => {
      const app = await appWith();
      const { conversationId, turnId, result, approvalId } = await pausedTurn(app);

      const paused = await collect(follower(app).follow(turnId, 0, AbortSignal.timeout(10_000)));
      const requested = paused.at(-1)!;
      expect(requested).toEqual({
        type: "approval_requested",
        id: paused.length,
        approvals: [{ approvalId, toolCallId: result.approvals?.[0]?.toolCallId, tool: "record_effect", expiresAt: result.approvals?.[0]?.expiresAt }],
      });
      expect(paused.map((e) => e.type)).not.toContain("tool_started");

      await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });
      const resumed = await collect(follower(app).follow(turnId, requested.id, AbortSignal.timeout(10_000)));
      expect(resumed.map((e) => e.id)).toEqual(resumed.map((_, i) => requested.id + 1 + i));
      expect(resumed.filter((e) => e.type === "tool_started" || e.type === "tool_finished")).toMatchObject([
        { type: "tool_started", tool: "record_effect" },
        { type: "tool_finished", tool: "record_effect", status: "success" },
      ]);
      expect(resumed.at(-1)).toMatchObject({ type: "done", answer: expect.stringContaining("recorded ship it") });
    });
  });

  describe("decide on a replaced turn", () => {
    it("throws ApprovalSupersededError after a newer turn began, and the newer turn sees the call as not run", async () => {
      const app = await appWith();
      const { conversationId, turnId, approvalId } = await pausedTurn(app);
      const newer = await app.runner.run({ conversationId, caller: alice, content: "never mind, hello", turnId: randomUUID() });
      expect(newer.status).toBe("completed");

      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).rejects.toThrow(ApprovalSupersededError);
      expect((await app.database.turns.get(turnId))?.status).toBe("superseded");
      expect(await effects(conversationId)).toHaveLength(0);
      const tool = (await stateOf(app, conversationId)).find((m) => m.getType() === "tool");
      expect(tool?.content).toContain("Not run");
    });
  });

  describe("a newer question after a decision, before the turn resumed", () => {
    it("supersedes the approved call that will never run, and the resumed job runs nothing", async () => {
      const { app, jobs } = await queuedApp();
      const { conversationId, turnId, approvalId } = await pausedTurn(app);
      const decided = await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });
      expect(decided).toMatchObject({ decided: true, resumed: true });
      expect(jobs).toHaveLength(1);

      const newer = await app.runner.run({ conversationId, caller: alice, content: "never mind, hello", turnId: randomUUID() });

      expect(newer.status).toBe("completed");
      expect((await app.database.turns.get(turnId))?.status).toBe("superseded");
      const approval = await app.database.approvals.get(approvalId);
      expect(approval).toMatchObject({ status: "superseded", decision: { kind: "approve", by: alice.principal } });
      // The queued job resumes the turn as the worker would: same turn, same question.
      await expect(app.runner.run({ conversationId, caller: alice, content: jobs[0].content, turnId })).rejects.toThrow(TurnSupersededError);
      expect(await effects(conversationId)).toHaveLength(0);
    });
  });

  describe("a decision that lands while the turn is being paused", () => {
    /** Runs a turn that pauses, taking alice's approval inside `during` (after the real write it wraps), as a racing request would. */
    async function raced(app: App, during: (decide: () => Promise<DecisionResult>) => void) {
      const { _id: conversationId } = await app.database.conversations.create(alice.principal);
      const turnId = randomUUID();
      let approvalId = "";
      let decision: DecisionResult | undefined;
      const store = app.database.approvals;
      const open = store.open.bind(store);
      store.open = async (docs, fence) => {
        await open(docs, fence);
        approvalId = docs[0]._id;
      };
      during(async () => (decision = await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })));
      const plain = { conversationId, caller: alice, content: 'record_effect {"note": "ship it"}', turnId };
      const result = await app.runner.run({ ...plain, origin: apiTurnJob(plain) });
      return { conversationId, turnId, result, decision: () => decision };
    }

    it("between recording the approvals and marking the turn waiting: the same attempt goes on, runs the call once, hands nothing on", async () => {
      const { app, jobs } = await queuedApp();
      const store = app.database.approvals;
      const { conversationId, turnId, result, decision } = await raced(app, (decide) => {
        const open = store.open.bind(store);
        store.open = async (docs, fence) => {
          await open(docs, fence);
          await decide();
        };
      });

      // The decision found the turn still running, so it handed nothing on: the runner's re-check after its own write did.
      expect(decision()).toMatchObject({ decided: true, resumed: false });
      expect(result.status).toBe("completed");
      expect(result.answer).toContain("recorded ship it");
      expect(await effects(conversationId)).toHaveLength(1);
      expect(await app.database.turns.get(turnId)).toMatchObject({ status: "completed" });
      expect(await app.database.turns.listCalls(turnId)).toHaveLength(2);
      expect(jobs).toHaveLength(0);
    });

    it("after a crash between the two writes: a decision hands nothing on, and the job's redelivery runs the call once", async () => {
      const { app, jobs } = await queuedApp();
      const { _id: conversationId } = await app.database.conversations.create(alice.principal);
      const turnId = randomUUID();
      const store = app.database.approvals;
      const open = store.open.bind(store);
      let approvalId = "";
      store.open = async (docs, fence) => {
        await open(docs, fence);
        approvalId = docs[0]._id;
        store.open = open;
        throw new SimulatedCrash("between recording the approvals and marking the turn waiting");
      };
      const plain = { conversationId, caller: alice, content: 'record_effect {"note": "ship it"}', turnId };
      const request = { ...plain, origin: apiTurnJob(plain) };
      await expect(app.runner.run(request)).rejects.toThrow(SimulatedCrash);

      expect(await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).toMatchObject({ decided: true, resumed: false });
      expect(jobs).toHaveLength(0);
      // The worker's job failed, so the queue delivers it again: the run reads the decision and resumes.
      expect(await app.runner.run(request)).toMatchObject({ status: "completed" });
      expect(await effects(conversationId)).toHaveLength(1);
    });

    it("between marking the turn waiting and the runner's re-check: both hand it on, the graph resumes once, the queued job runs nothing", async () => {
      const { app, jobs } = await queuedApp();
      const turns = app.database.turns;
      let early: Promise<unknown> | undefined;
      const { conversationId, turnId, result, decision } = await raced(app, (decide) => {
        const awaitApproval = turns.awaitApproval.bind(turns);
        turns.awaitApproval = async (turn, tools, fence) => {
          await awaitApproval(turn, tools, fence);
          await decide();
          // Its job delivered at once (a worker beside the API) finds the conversation held, and is retried later.
          const job = jobs[0];
          early = app.runner.run({ conversationId: job.conversationKey, caller: alice, content: job.content, turnId: turnIdForJob(job), origin: job });
          await early.catch(() => undefined);
        };
      });

      expect(decision()).toMatchObject({ decided: true, resumed: true });
      expect(jobs).toHaveLength(1);
      await expect(early).rejects.toMatchObject({ name: "ConflictError" });
      expect(result.status).toBe("completed");
      // The job, delivered as the worker runs it, finds the turn finished: no model call, no second effect.
      const job = jobs[0];
      const again = await app.runner.run({ conversationId, caller: alice, content: job.content, turnId: turnIdForJob(job), origin: job });
      expect(again).toMatchObject({ status: "completed", answer: result.answer });
      expect(await effects(conversationId)).toHaveLength(1);
      expect(await app.database.turns.listCalls(turnId)).toHaveLength(2);
    });
  });

  describe("decide by someone else", () => {
    it("throws ForbiddenError for a caller who is not the requester", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);
      await expect(app.approvals.decide(conversationId, approvalId, bob, { kind: "approve" })).rejects.toThrow(ForbiddenError);
      expect((await app.database.approvals.get(approvalId))?.status).toBe("pending");
    });

    it("lets a caller with an approver role decide, and not the requester without it", async () => {
      const app = await appWith({ require: "always", approvers: { roles: ["manager"] } });
      const { conversationId, approvalId } = await pausedTurn(app);
      await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).rejects.toThrow(ForbiddenError);
      await app.approvals.decide(conversationId, approvalId, manager, { kind: "approve" });
      expect(await effects(conversationId)).toHaveLength(1);
    });
  });

  describe("forDecision", () => {
    it("returns the approval to an approver, and decides nothing", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);
      expect(await app.approvals.forDecision(conversationId, approvalId, alice)).toMatchObject({ _id: approvalId, status: "pending" });
      expect((await app.database.approvals.get(approvalId))?.status).toBe("pending");
    });

    it("throws ForbiddenError for a caller who may not decide", async () => {
      const app = await appWith();
      const { conversationId, approvalId } = await pausedTurn(app);
      await expect(app.approvals.forDecision(conversationId, approvalId, bob)).rejects.toThrow(ForbiddenError);
    });
  });

  describe("decide after a crash", () => {
    for (const point of [...APPROVAL_FAULT_POINTS, "before-tool-effect", "after-tool-effect"] as const) {
      it(`runs the approved call exactly once when the process died ${point}`, async () => {
        const faults = crashOnceAt(point);
        const app = await appWith({ require: "always" }, faults);
        const { conversationId, turnId, request, approvalId } = await pausedTurn(app);
        // A crash before the decision would leave nothing to resume from; the points are all after it.
        faults.fired = false;

        await expect(app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" })).rejects.toThrow(SimulatedCrash);
        expect(faults.fired).toBe(true);
        // The client repeats its request; the queue delivers the job again.
        await app.approvals.decide(conversationId, approvalId, alice, { kind: "approve" });
        if ((await app.database.turns.get(turnId))?.status !== "completed") await app.runner.run(request);

        expect(await effects(conversationId)).toHaveLength(1);
        const turn = await app.database.turns.get(turnId);
        expect(turn?.status).toBe("completed");
        expect(turn?.answer).toContain("recorded ship it");
      });
    }
  });
});
