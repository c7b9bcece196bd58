import { randomUUID } from "node:crypto";
import type { BaseMessage } from "@langchain/core/messages";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { TurnResult } from "../../lib/agent/turn-runner.js";
import { createApp, type App } from "../../lib/app.js";
import { loadConfig } from "../../lib/config/config.js";
import { silentLogger } from "../../lib/logger.js";
import { DEFAULT_LEASE_TTL_MS } from "../../lib/config/database-config.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { chainBreak } from "../support/checkpoint-chain.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { Gate } from "../support/gate.js";
import { ManualClock } from "../support/manual-clock.js";
import { useTestDatabase } from "../support/store-fixture.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };

/**
 * What the test does next. `ask`: a runner starts a new turn, which waits in its model call;
 * `retry`: a runner runs a finished-with-error turn again; `answer`: one waiting model call
 * returns; `freeze`: time passes beyond the lease with no heartbeat (every process paused), so
 * leases lapse mid-call; `beat`: time passes with heartbeats, overdue ones included.
 */
type Step =
  | { kind: "ask"; runner: 0 | 1 }
  | { kind: "retry"; runner: 0 | 1; pick: number }
  | { kind: "answer"; pick: number }
  | { kind: "freeze" }
  | { kind: "beat" };

const runnerArb = fc.constantFrom(0 as const, 1 as const);
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("ask" as const), runner: runnerArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("retry" as const), runner: runnerArb, pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("answer" as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.constant({ kind: "freeze" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "beat" as const }) },
);

/**
 * The interleaving that corrupted threads before fencing, with its variations: a turn waits in
 * its model call, maybe every process freezes past the lease, the other runner asks, maybe
 * heartbeats run, both calls return in either order, and maybe a failed turn is retried.
 */
const overlapArb: fc.Arbitrary<Step[]> = fc
  .record({ first: runnerArb, freeze: fc.boolean(), beat: fc.boolean(), newerFirst: fc.boolean(), retry: fc.option(fc.nat()) })
  .map(({ first, freeze, beat, newerFirst, retry }) => {
    const second = first === 0 ? 1 : 0;
    const steps: Step[] = [{ kind: "ask", runner: first }];
    if (freeze) steps.push({ kind: "freeze" });
    steps.push({ kind: "ask", runner: second });
    if (beat) steps.push({ kind: "beat" });
    steps.push({ kind: "answer", pick: newerFirst ? 1 : 0 }, { kind: "answer", pick: 0 });
    if (retry !== null) steps.push({ kind: "retry", runner: first, pick: retry });
    return steps;
  });

const scenarioArb = fc
  .array(
    fc.oneof(
      overlapArb,
      stepArb.map((step) => [step]),
    ),
    { minLength: 2, maxLength: 6 },
  )
  .map((parts) => parts.flat());

interface Run {
  turnId: string;
  question: string;
  gate: Gate;
  settled: Promise<{ ok: true; result: TurnResult } | { ok: false; error: unknown }>;
  done: boolean;
}

let converse: ConverseEndpoint;
const database = useTestDatabase("two_runners", { clearBeforeEach: false });
const clock = new ManualClock();
let containers: [App, App];
/** The gate of the model call now asked for each question. */
const gates = new Map<string, Gate>();

beforeAll(async () => {
  converse = await startConverseEndpoint({
    respond: async (request) => {
      const question = lastUserText(request);
      await gates.get(question)?.pass();
      return { text: `answer to: ${question}` };
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, MODEL_PROVIDER: "bedrock" });
  const container = () => createApp(config, { mongoClient: database.client, clock, logger: silentLogger });
  containers = [await container(), await container()];
});

afterAll(async () => {
  for (const gate of gates.values()) gate.open();
  await Promise.all(containers?.map((a) => a.close()) ?? []);
  await converse?.close();
  vi.unstubAllEnvs();
});

/** Plays the steps on one new conversation with both containers, and returns every run. */
async function play(steps: Step[]): Promise<{ conversationId: string; runs: Run[] }> {
  const { _id: conversationId } = await containers[0].database.conversations.create(caller.principal);
  const runs: Run[] = [];
  const busy: (Run | undefined)[] = [undefined, undefined];
  const start = async (runner: 0 | 1, turnId: string, question: string) => {
    if (busy[runner] && !busy[runner].done) return;
    const gate = new Gate();
    gates.set(question, gate);
    const run: Run = { turnId, question, gate, done: false, settled: undefined as never };
    run.settled = containers[runner].runner.run({ conversationId, caller, content: question, turnId }).then(
      (result) => ({ ok: true as const, result }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    void run.settled.then(() => (run.done = true));
    runs.push(run);
    busy[runner] = run;
    // Explicit synchronisation: the turn is either in its model call or already refused.
    await Promise.race([gate.reached, run.settled]);
  };
  for (const step of steps) {
    if (step.kind === "ask") await start(step.runner, randomUUID(), `q${runs.length} of ${conversationId}`);
    if (step.kind === "retry") {
      const failed = [];
      for (const run of runs) if (run.done && !(await run.settled).ok) failed.push(run);
      const again = failed[step.pick % Math.max(1, failed.length)];
      if (again) await start(step.runner, again.turnId, again.question);
    }
    if (step.kind === "answer") {
      const waiting = runs.filter((r) => !r.done);
      const run = waiting[step.pick % Math.max(1, waiting.length)];
      if (run) {
        run.gate.open();
        await run.settled;
      }
    }
    if (step.kind === "freeze") clock.pause(DEFAULT_LEASE_TTL_MS + 1);
    if (step.kind === "beat") await clock.advance(Math.floor(DEFAULT_LEASE_TTL_MS / 3));
  }
  for (const run of runs) run.gate.open();
  await Promise.all(runs.map((r) => r.settled));
  return { conversationId, runs };
}

const answerTo = (question: unknown) => `answer to: ${String(question)}`;

async function checkInvariants(conversationId: string, runs: Run[]): Promise<void> {
  const app = containers[0];
  expect(await chainBreak(app.database.checkpointer, conversationId)).toBeUndefined();
  const latest = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId } });
  const messages = (latest?.checkpoint.channel_values.messages as BaseMessage[] | undefined) ?? [];
  for (const [i, message] of messages.entries()) {
    if (message.getType() !== "ai") continue;
    const previous = messages[i - 1];
    expect(previous?.getType(), "an answer follows its own question").toBe("human");
    expect(message.content).toBe(answerTo(previous?.content));
  }

  const record = await app.database.messages.list(conversationId);
  for (const [i, message] of record.entries()) {
    if (message.role !== "assistant") continue;
    expect(record[i - 1]).toMatchObject({ role: "user", turnId: message.turnId });
    expect(message.content).toBe(answerTo(record[i - 1]?.content));
  }

  for (const run of runs) {
    const outcome = await run.settled;
    if (outcome.ok) expect(outcome.result.answer).toBe(answerTo(run.question));
    const turn = await app.database.turns.get(run.turnId);
    if (turn?.status === "completed") expect(turn.answer).toBe(answerTo(run.question));
    if (turn?.status === "superseded") expect(turn.answer).toBeUndefined();
  }
}

describe("TurnRunner", () => {
  describe("run by two runners on one thread, with leases lapsing mid-call", () => {
    it("keeps the checkpoint chain linear and every answer with its own question", async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (steps) => {
          const { conversationId, runs } = await play(steps);
          await checkInvariants(conversationId, runs);
        }),
        { numRuns: 12 },
      );
      expect(clock.scheduled).toBe(0);
    }, 180_000);
  });
});
