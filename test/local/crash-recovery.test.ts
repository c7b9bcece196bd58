import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openEventStream } from "../support/sse-client.js";
import { APPROVER_ROLE, CRASH_LEASE_TTL_MS, RECOVERY_DEADLINE_MS, startCrashCluster, type CrashCluster } from "../support/crash-harness.js";

/**
 * The local server killed (SIGKILL, in a child process) at a fault point of a turn and started
 * again on the same database: the turn is finished by the recovery sweep within the lease's TTL
 * plus one sweep (docs/recovery.md), from what its thread holds, with no effect repeated.
 */
let cluster: CrashCluster;
let alice: string;
let manager: string;

beforeAll(async () => {
  cluster = await startCrashCluster();
  alice = await cluster.token("alice");
  manager = await cluster.token("alice", [APPROVER_ROLE]);
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

const FINAL = new Set(["completed", "failed", "superseded"]);

async function until<T>(what: string, read: () => Promise<T | undefined>, deadlineMs = RECOVERY_DEADLINE_MS): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`${what}: not within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function conversation(): Promise<string> {
  return (await cluster.call("POST", "/v1/conversations", { token: alice })).body.conversationId as string;
}

/** Sends a question to a server that dies on it; resolves once the process is gone. */
async function askAndDie(id: string, content: string): Promise<void> {
  await cluster.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content } }).catch(() => undefined);
  await cluster.server.exited;
}

async function onlyTurn(id: string): Promise<{ turnId: string; status: string; error?: { code: string }; answer?: string }> {
  const turns = (await cluster.call("GET", `/v1/conversations/${id}/turns`, { token: alice })).body.turns as { turnId: string; status: string }[];
  expect(turns).toHaveLength(1);
  return turns[0];
}

async function finalTurn(id: string, turnId: string) {
  return until(`turn ${turnId} final`, async () => {
    const turn = (await cluster.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice })).body;
    return FINAL.has(turn.status) ? turn : undefined;
  }).catch(async (error: unknown) => {
    if (process.env.CRASH_DEBUG) {
      console.log(JSON.stringify(await cluster.db.collection("turns").find({ conversationId: id }).toArray(), null, 1));
      console.log(JSON.stringify(await cluster.db.collection("turn_jobs").find({}).toArray(), null, 1));
      console.log(
        JSON.stringify(
          await cluster.db
            .collection("conversations")
            .find({ _id: id as never })
            .toArray(),
          null,
          1,
        ),
      );
    }
    throw error;
  });
}

/** The thread's last answer and the record's answers. */
async function answers(id: string): Promise<{ thread: string | undefined; record: string[] }> {
  const state = (await cluster.call("GET", `/v1/conversations/${id}/state`, { token: alice })).body.messages as {
    role: string;
    content: string;
    toolCalls?: unknown[];
  }[];
  const last = state[state.length - 1];
  const record = (await cluster.call("GET", `/v1/conversations/${id}/messages`, { token: alice })).body.messages as { role: string; content: string }[];
  return {
    thread: last?.role === "assistant" && !last.toolCalls?.length ? last.content : undefined,
    record: record.filter((m) => m.role === "assistant").map((m) => m.content),
  };
}

/** Follows the turn's event stream from the start: it must end, with a final event. */
async function streamEnds(id: string, turnId: string): Promise<string | undefined> {
  const stream = await openEventStream(`${cluster.server.url}/v1/conversations/${id}/turns/${turnId}/events`, {
    headers: { authorization: `Bearer ${alice}`, accept: "text/event-stream" },
  });
  const timer = setTimeout(() => stream.close(), RECOVERY_DEADLINE_MS);
  try {
    const events = await stream.rest();
    return events[events.length - 1]?.event;
  } catch {
    return "cut";
  } finally {
    clearTimeout(timer);
  }
}

describe("local server: recovery after a SIGKILL", { timeout: 120_000 }, () => {
  it("finishes a turn orphaned mid-turn within the TTL plus one sweep, closes its stream, and takes the next message", async () => {
    await cluster.restart({ at: "after-model-call" });
    const id = await conversation();
    await askAndDie(id, "what is a lease");
    await cluster.restart();
    const started = Date.now();
    const { turnId } = await onlyTurn(id);

    const turn = await finalTurn(id, turnId);
    const next = await until("a new message accepted", async () => {
      const res = await cluster.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "and a fence" } });
      return res.status === 200 ? res : undefined;
    });

    expect(turn.status).toBe("completed");
    expect(Date.now() - started).toBeLessThan(RECOVERY_DEADLINE_MS);
    expect(next.body.status).toBe("completed");
    expect(["done"]).toContain(await streamEnds(id, turnId));
  });

  it("has a second server finish the dead holder's turn by its own recovery sweep within the TTL plus one sweep, and take a new message", async () => {
    // The recovery sweep's own interval, not the approval sweep's (a minute here): the bound is TTL + TURN_RECOVERY_SWEEP_SECONDS.
    const sweepMs = 2_000;
    // What the sweep's work (the thread read, the record, the final event) and this test's polling may take beyond the bound on a loaded machine.
    const workMs = 3_000;
    const peer = await cluster.startPeer({ TURN_RECOVERY_SWEEP_SECONDS: String(sweepMs / 1000), APPROVAL_SWEEP_SECONDS: "60" });
    await cluster.restart({ at: "after-model-call" });
    const id = await conversation();
    await askAndDie(id, "what does a sweep do");
    const killedAt = Date.now();
    cluster.server = peer;
    const { turnId } = await onlyTurn(id);
    expect((await cluster.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice })).body.status).toBe("running");

    const turn = await finalTurn(id, turnId);
    const finishedMs = Date.now() - killedAt;
    const next = await until("a new message accepted", async () => {
      const res = await cluster.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "and then" } });
      return res.status === 200 ? res : undefined;
    });
    const acceptedMs = Date.now() - killedAt;

    expect(turn.status).toBe("completed");
    expect(finishedMs).toBeLessThan(CRASH_LEASE_TTL_MS + sweepMs + workMs);
    // The new message waits for the resumed attempt (the sweep handed the turn to the queue) to release the lease, within the same bound.
    expect(acceptedMs).toBeLessThan(CRASH_LEASE_TTL_MS + sweepMs + workMs);
    expect(next.body.status).toBe("completed");
    expect(await streamEnds(id, turnId)).toBe("done");
  });

  it("runs an approved call exactly once when the server dies in its resume before the effect", async () => {
    await cluster.restart({ at: "before-tool-effect" });
    const id = await conversation();
    const asked = await cluster.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: 'approved_effect {"note": "ship"}' } });
    expect(asked.status).toBe(202);
    const approvalId = asked.body.approvals[0].approvalId as string;
    await cluster.call("POST", `/v1/conversations/${id}/approvals/${approvalId}`, { token: manager, json: { decision: "approve" } }).catch(() => undefined);
    await cluster.server.exited;
    await cluster.restart();

    const turn = await finalTurn(id, asked.body.turnId as string);

    expect(turn.status).toBe("completed");
    expect([...(await cluster.effects(id)).values()]).toEqual([1]);
    expect((await answers(id)).record).toEqual([turn.answer]);
  });

  it("runs an approved call at most once when the server dies inside the tool, after its effect", async () => {
    await cluster.restart({ at: "inside-tool" });
    const id = await conversation();
    const asked = await cluster.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: 'approved_effect {"note": "once"}' } });
    const approvalId = asked.body.approvals[0].approvalId as string;
    await cluster.call("POST", `/v1/conversations/${id}/approvals/${approvalId}`, { token: manager, json: { decision: "approve" } }).catch(() => undefined);
    await cluster.server.exited;
    await cluster.restart();

    const turn = await finalTurn(id, asked.body.turnId as string);

    expect(turn.status).toBe("completed");
    expect([...(await cluster.effects(id)).values()]).toEqual([1]);
  });

  it("leaves no completed turn without its answer in the record when the server dies between the record's answer and the turn's completion", async () => {
    await cluster.restart({ at: "after-record-answer" });
    const id = await conversation();
    await askAndDie(id, "tell me about records");
    await cluster.restart();
    const { turnId } = await onlyTurn(id);

    const turn = await finalTurn(id, turnId);
    const { thread, record } = await answers(id);

    expect(turn.status).toBe("completed");
    expect(record).toEqual([turn.answer]);
    expect(thread).toBe(turn.answer);
  });

  it("records the answer the thread holds when the server dies after the last checkpoint, before the record", async () => {
    await cluster.restart({ at: "after-answer" });
    const id = await conversation();
    await askAndDie(id, "tell me about checkpoints");
    await cluster.restart();
    const { turnId } = await onlyTurn(id);

    const turn = await finalTurn(id, turnId);
    const { thread, record } = await answers(id);

    expect(turn.status).toBe("completed");
    expect(thread).toBeDefined();
    expect(turn.answer).toBe(thread);
    expect(record).toEqual([thread]);
  });
});
