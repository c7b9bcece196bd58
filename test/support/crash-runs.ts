import { prng } from "../../lib/prng.js";
import { openEventStream } from "./sse-client.js";
import { RECOVERY_DEADLINE_MS, type CrashCluster } from "./crash-harness.js";

/** The turns a run drives; each is killed somewhere in it. */
export const RUN_KINDS = ["plain", "tool", "approval", "streamed", "edit"] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/** Where a run's server dies: a fault point (its nth passage) or a timer after the run's request left. */
export type RunCrash = { at: string; nth: number } | { afterMs: number };

/** Fault points each kind of turn passes through (`inside-tool`: after the tool's effect, before it returns). */
const POINTS: Record<RunKind, string[]> = {
  plain: ["after-user-message", "after-model-call", "after-answer", "after-record-answer", "after-record"],
  tool: [
    "after-user-message",
    "after-model-call",
    "before-tool-effect",
    "inside-tool",
    "after-tool-effect",
    "after-answer",
    "after-record-answer",
    "after-record",
  ],
  approval: [
    "after-decision",
    "after-resume-enqueued",
    "before-tool-effect",
    "inside-tool",
    "after-tool-effect",
    "after-answer",
    "after-record-answer",
    "after-record",
  ],
  streamed: ["after-model-call", "after-answer", "after-record-answer", "after-record"],
  edit: ["after-user-message", "after-model-call", "after-answer", "after-record-answer", "after-record"],
};

export interface RunReport {
  kind: RunKind;
  crash: RunCrash;
  /** Whether the server died during the run (a timer after the turn ended finds it done). */
  died: boolean;
  statuses: string[];
  /** Effects per tool call: each must be at most 1, and 1 for an approved call unless its outcome is reported unknown. */
  effects: number[];
  /** Approved calls whose run was interrupted inside the tool and reported to the model as of unknown outcome. */
  unknownOutcomes: number;
  problems: string[];
  /** Milliseconds spent driving the turn, restarting the server, and settling and checking. */
  ms?: { drive: number; restart: number; settle: number };
}

interface TurnView {
  turnId: string;
  status: string;
  answer?: string;
  error?: { code?: string };
}

interface StateMessage {
  id?: string;
  role: string;
  content: string;
  toolCalls?: { id: string }[];
  toolCallId?: string;
}

const FINAL = new Set(["completed", "failed", "superseded"]);
/** How long past its deadline a run still watches its turns, to report them late rather than stuck. */
const LATE_WATCH_MS = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Picks the run's kind and crash from the seeded generator. */
export function planRun(random: () => number): { kind: RunKind; crash: RunCrash } {
  const kind = RUN_KINDS[Math.floor(random() * RUN_KINDS.length)];
  if (random() < 0.5) return { kind, crash: { afterMs: Math.floor(random() * 1200) } };
  const points = POINTS[kind];
  return { kind, crash: { at: points[Math.floor(random() * points.length)], nth: 1 } };
}

/** The generator of a run's plan, from the seed and the run's index. */
export function runRandom(seed: number, index: number): () => number {
  return prng(seed * 1_000_003 + index);
}

/**
 * One run: arm the server, drive a turn of `kind`, let it die, start it again and
 * check, within the recovery deadline, what docs/recovery.md promises.
 */
export async function crashRun(cluster: CrashCluster, kind: RunKind, crash: RunCrash, index: number): Promise<RunReport> {
  const report: RunReport = { kind, crash, died: false, statuses: [], effects: [], unknownOutcomes: 0, problems: [] };
  const t0 = Date.now();
  const alice = await armed(cluster, crash);
  const manager = await cluster.token("alice", ["manager"]);
  const id = (await cluster.call("POST", "/v1/conversations", { token: alice })).body.conversationId as string;
  const ask = (content: string) => cluster.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content } });
  const timer = "afterMs" in crash ? setTimeout(() => void cluster.kill(), crash.afterMs) : undefined;
  try {
    if (kind === "plain") await ask(`question ${index}`);
    else if (kind === "tool") await ask(`record_effect {"note": "run ${index}"}`);
    else if (kind === "approval") {
      const asked = await ask(`approved_effect {"note": "run ${index}"}`);
      const approvalId = asked.body?.approvals?.[0]?.approvalId as string | undefined;
      if (approvalId) await cluster.call("POST", `/v1/conversations/${id}/approvals/${approvalId}`, { token: manager, json: { decision: "approve" } });
    } else if (kind === "streamed") {
      const stream = await openEventStream(`${cluster.server.url}/v1/conversations/${id}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${alice}`, accept: "text/event-stream", "content-type": "application/json" },
        body: JSON.stringify({ content: `streamed question ${index}` }),
      });
      await stream.rest();
    } else {
      const first = await ask(`question ${index}`);
      await cluster.call("POST", `/v1/conversations/${id}/turns/${first.body.turnId}/edit`, { token: alice, json: { content: `edited question ${index}` } });
    }
  } catch {
    // The server died under the request.
  }
  clearTimeout(timer);
  // Give an armed point reached by the worker (after the request answered) its moment.
  await Promise.race([cluster.server.exited, sleep(300)]);
  const t1 = Date.now();
  report.died = !cluster.alive();
  // Alive: disarmed, it goes on serving (a run needs no start of its own); dead, or dying before the disarm, it starts again.
  if (report.died || !(await cluster.arm())) {
    report.died = true;
    await cluster.restart();
  }
  const t2 = Date.now();
  await settle(cluster, id, alice, manager, report);
  report.ms = { drive: t1 - t0, restart: t2 - t1, settle: Date.now() - t2 };
  return report;
}

/** Arms the running server with the run's fault (a timer run needs none; a dead server starts armed) and returns a token. */
async function armed(cluster: CrashCluster, crash: RunCrash): Promise<string> {
  const fault = "at" in crash ? crash : undefined;
  if (!(await cluster.arm(fault))) await cluster.restart(fault);
  return cluster.token("alice");
}

/** Waits for every turn to end (approving what still waits), then checks effects, record against thread, and streams. */
async function settle(cluster: CrashCluster, id: string, alice: string, manager: string, report: RunReport): Promise<void> {
  const end = Date.now() + RECOVERY_DEADLINE_MS * 2;
  // Past the deadline a run keeps watching a while, to tell a late turn (a starved machine) from a stuck one.
  const giveUp = end + LATE_WATCH_MS;
  let turns: TurnView[] = [];
  for (;;) {
    turns = ((await cluster.call("GET", `/v1/conversations/${id}/turns`, { token: alice }).catch(() => undefined))?.body?.turns as TurnView[]) ?? [];
    const pending = ((await cluster.call("GET", `/v1/conversations/${id}/approvals?status=pending`, { token: alice })).body?.approvals ?? []) as {
      approvalId: string;
    }[];
    for (const approval of pending) {
      await cluster.call("POST", `/v1/conversations/${id}/approvals/${approval.approvalId}`, { token: manager, json: { decision: "approve" } });
    }
    if (turns.length > 0 && turns.every((t) => FINAL.has(t.status))) {
      if (Date.now() > end) report.problems.push(`turns final only ${Date.now() - end} ms after the deadline (${RECOVERY_DEADLINE_MS * 2} ms)`);
      break;
    }
    // Killed before the request made its turn: nothing began, nothing to recover.
    if (turns.length === 0 && Date.now() > end - RECOVERY_DEADLINE_MS) break;
    if (Date.now() > giveUp) {
      report.problems.push(`turns not final within ${RECOVERY_DEADLINE_MS * 2 + LATE_WATCH_MS} ms: ${turns.map((t) => t.status).join(", ")}`);
      break;
    }
    await sleep(150);
  }
  // The listing is a summary: each turn's own resource has its answer and error.
  turns = await Promise.all(
    turns.map(async (t) => ((await cluster.call("GET", `/v1/conversations/${id}/turns/${t.turnId}`, { token: alice })).body as TurnView) ?? t),
  );
  report.statuses = turns.map((t) => t.status);
  for (const t of turns) if (t.status === "failed" && !t.error?.code) report.problems.push(`turn ${t.turnId} failed without a code`);

  const state = ((await cluster.call("GET", `/v1/conversations/${id}/state`, { token: alice })).body?.messages ?? []) as StateMessage[];
  const record = ((await cluster.call("GET", `/v1/conversations/${id}/messages`, { token: alice })).body?.messages ?? []) as {
    turnId: string;
    role: string;
    content: string;
  }[];
  const approvals = ((await cluster.call("GET", `/v1/conversations/${id}/approvals`, { token: alice })).body?.approvals ?? []) as {
    toolCallId: string;
    status: string;
  }[];

  const effects = await cluster.effects(id);
  const calls = state.flatMap((m) => m.toolCalls?.map((c) => c.id) ?? []);
  for (const callId of new Set([...calls, ...effects.keys()])) {
    const count = effects.get(callId) ?? 0;
    report.effects.push(count);
    if (count > 1) report.problems.push(`tool call ${callId} ran ${count} times`);
    const approved = approvals.some((a) => a.toolCallId === callId && a.status === "approved");
    if (!approved || count === 1) continue;
    const result = state.find((m) => m.role === "tool" && m.toolCallId === callId);
    if (result && /interrupted while it ran|was not run again/i.test(result.content)) report.unknownOutcomes += 1;
    else report.problems.push(`approved tool call ${callId} ran ${count} times`);
  }

  for (const turn of turns) {
    const at = state.findIndex((m) => m.id === `${turn.turnId}:user`);
    const recorded = record.find((m) => m.turnId === turn.turnId && m.role === "assistant")?.content;
    if (turn.status === "completed" && recorded !== turn.answer) {
      const answers = record.filter((m) => m.turnId === turn.turnId && m.role === "assistant").map((m) => m.content);
      report.problems.push(`turn ${turn.turnId}: record's answer is not the turn's (record ${JSON.stringify(answers)}, turn ${JSON.stringify(turn.answer)})`);
    }
    if (turn.status !== "completed" && recorded !== undefined) report.problems.push(`turn ${turn.turnId} is ${turn.status} with an answer recorded`);
    if (at < 0) continue;
    const next = state.findIndex((m, i) => i > at && m.role === "user");
    const last = state[(next < 0 ? state.length : next) - 1];
    const threadAnswer = last && last.role === "assistant" && !last.toolCalls?.length && last !== state[at] ? last.content : undefined;
    if (turn.status === "completed" && threadAnswer !== turn.answer) report.problems.push(`turn ${turn.turnId}: thread's answer is not the turn's`);
    if (turn.status !== "completed" && threadAnswer !== undefined)
      report.problems.push(`turn ${turn.turnId} is ${turn.status} while the thread holds an answer`);
  }

  for (const turn of turns) {
    // As a client follows: a stream that ends at approval_requested is followed again from that event, for the continuation.
    let last: string | undefined;
    let afterId = "0";
    for (let follows = 0; follows < 5; follows++) {
      const stream = await openEventStream(`${cluster.server.url}/v1/conversations/${id}/turns/${turn.turnId}/events`, {
        headers: { authorization: `Bearer ${alice}`, accept: "text/event-stream", "last-event-id": afterId },
      });
      const cut = setTimeout(() => stream.close(), RECOVERY_DEADLINE_MS);
      const events = await stream.rest().catch(() => undefined);
      clearTimeout(cut);
      const final = events?.[events.length - 1];
      last = final?.event;
      if (last !== "approval_requested" || !final?.id) break;
      afterId = final.id;
    }
    if (!last || !["done", "failed"].includes(last)) report.problems.push(`turn ${turn.turnId}: stream did not end with a final event (${last ?? "cut"})`);
  }
}
