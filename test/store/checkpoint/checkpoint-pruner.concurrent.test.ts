import { HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { StaleWriterError } from "../../../lib/errors.js";
import { prng } from "../../../lib/prng.js";
import type { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import { propertyRuns } from "../../support/property-runs.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { newSaver, scriptedGraph } from "./saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("concurrent_prune", { clearBeforeEach: false });

/** The prunes that may overlap in production: a retried job, a sweep without a fence, a paused process whose fence was taken over. */
const SCENARIOS = ["two at one epoch", "one without a fence", "one outliving its fence", "three at once", "turn only"] as const;
type Scenario = (typeof SCENARIOS)[number];

/** A prune may be refused (StaleWriterError) or skipped; anything else is a failure. */
async function prune(saver: ThreadwiseSaver, threadId: string, fenceEpoch?: number): Promise<void> {
  try {
    await saver.prune(threadId, fenceEpoch === undefined ? {} : { fenceEpoch });
  } catch (error) {
    if (!(error instanceof StaleWriterError)) throw error;
  }
}

async function run(seed: number, turns: number): Promise<Scenario[]> {
  const random = prng(seed);
  const { saver } = await newSaver(test);
  const graph = scriptedGraph(saver, { toolOutput: 500 });
  const threadId = `t${seed}`;
  const played: Scenario[] = [];
  let epoch = 0;
  const turn = async (at: number) => {
    await saver.claimThread(threadId, at);
    await graph.invoke({ messages: [new HumanMessage(`q${at}`)] }, { configurable: { thread_id: threadId, fence_epoch: at } });
  };
  for (let n = 0; n < turns; n += 1) {
    epoch += 1;
    await turn(epoch);
    const scenario = SCENARIOS[Math.floor(random() * SCENARIOS.length)];
    played.push(scenario);
    if (scenario === "two at one epoch") await Promise.all([prune(saver, threadId, epoch), prune(saver, threadId, epoch)]);
    else if (scenario === "one without a fence") await Promise.all([prune(saver, threadId, epoch), prune(saver, threadId)]);
    else if (scenario === "three at once") await Promise.all([prune(saver, threadId, epoch), prune(saver, threadId), prune(saver, threadId, epoch)]);
    else if (scenario === "one outliving its fence") {
      // The next turn's writer takes the fence while this prune runs.
      const stale = epoch;
      epoch += 1;
      await Promise.all([prune(saver, threadId, stale), turn(epoch).then(() => prune(saver, threadId, epoch))]);
    }
    const config = { configurable: { thread_id: threadId } };
    const state = await graph.getState(config);
    expect(state.values.messages.length, `after ${played.join(", ")}`).toBeGreaterThan(0);
    for await (const snapshot of graph.getStateHistory(config)) expect(snapshot.values).toBeDefined();
  }
  const final = await graph.getState({ configurable: { thread_id: threadId } });
  expect(final.values.messages.filter((m: unknown) => HumanMessage.isInstance(m)).length).toBe(epoch);
  return played;
}

describe("ThreadwiseSaver", () => {
  describe("prune", () => {
    const seeds = Array.from({ length: propertyRuns(4) }, (_, i) => 300 + i);
    it.each(seeds)(
      "leaves the thread whole under concurrent and stale prunes interleaved with turns, seed %i",
      async (seed) => {
        await run(seed, 6);
      },
      120_000,
    );

    it.each(seeds.slice(0, 3))(
      "leaves a thread without a fence whole under concurrent prunes, which only its merges' conditions order, seed %i",
      async (seed) => {
        const { saver } = await newSaver(test);
        const graph = scriptedGraph(saver, { toolOutput: 500 });
        const config = { configurable: { thread_id: "t" } };
        const random = prng(seed);
        for (let n = 1; n <= 6; n += 1) {
          await graph.invoke({ messages: [new HumanMessage(`q${n}`)] }, config);
          await Promise.all(Array.from({ length: 2 + Math.floor(random() * 2) }, () => saver.prune("t")));
          expect((await graph.getState(config)).values.messages).toHaveLength(4 * n);
          for await (const snapshot of graph.getStateHistory(config)) expect(snapshot.values).toBeDefined();
        }
      },
    );
  });
});
