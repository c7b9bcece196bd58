import { appendFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCrashCluster, type CrashCluster } from "../support/crash-harness.js";
import { crashRun, planRun, runRandom, type RunReport } from "../support/crash-runs.js";

/**
 * Random turns (plain, tool, approval, streamed, edit) on one MongoDB, the local server
 * SIGKILLed at a random fault point or moment of each and started again (docs/recovery.md,
 * "The crash test"). `npm test` runs a few seeded runs; `npm run test:crash` runs 200
 * (`CRASH_RUNS`, `CRASH_SEED` choose them; `CRASH_PARALLEL` servers, each on a database of its
 * own in the one MongoDB, take the runs in turn).
 */
const RUNS = Number(process.env.CRASH_RUNS ?? "3");
const SEED = Number(process.env.CRASH_SEED ?? "30");
/** `CRASH_ONLY=51,65`: just those runs of the seed (to replay a failed run alone). */
const ONLY = process.env.CRASH_ONLY?.split(",").map(Number);
const INDICES = ONLY ?? Array.from({ length: RUNS }, (_, i) => i);
const PARALLEL = Math.max(1, Math.min(INDICES.length, Number(process.env.CRASH_PARALLEL ?? "3")));

let clusters: CrashCluster[] = [];
beforeAll(async () => {
  clusters = await Promise.all(Array.from({ length: PARALLEL }, () => startCrashCluster()));
}, 60_000);
afterAll(async () => {
  await Promise.all(clusters.map((c) => c.close()));
});

/** The figures docs/recovery.md records: runs, kills, turns by final state, effects. */
function summary(reports: RunReport[]) {
  const turns: Record<string, number> = {};
  for (const s of reports.flatMap((r) => r.statuses)) turns[s] = (turns[s] ?? 0) + 1;
  const effects = reports.flatMap((r) => r.effects);
  return {
    runs: reports.length,
    seed: SEED,
    parallel: PARALLEL,
    kills: reports.filter((r) => r.died).length,
    turns,
    kinds: Object.fromEntries(["plain", "tool", "approval", "streamed", "edit"].map((k) => [k, reports.filter((r) => r.kind === k).length])),
    toolCalls: effects.length,
    effectsRunOnce: effects.filter((n) => n === 1).length,
    effectsNotRun: effects.filter((n) => n === 0).length,
    effectsRunTwice: effects.filter((n) => n > 1).length,
    unknownOutcomes: reports.reduce((n, r) => n + r.unknownOutcomes, 0),
    late: reports.filter((r) => r.problems.some((p) => p.includes("after the deadline"))).length,
    stuck: reports.filter((r) => r.problems.some((p) => p.includes("not final within"))).length,
    problems: reports.reduce((n, r) => n + r.problems.length, 0),
  };
}

describe("local server: random turns killed and recovered", () => {
  const runs = `${INDICES.length} runs, seed ${SEED}`;
  it(`ends every turn completed, failed with a code, or superseded, with effects at most once and record and thread agreeing (${runs})`, {
    timeout: 60_000 + (INDICES.length / PARALLEL) * 100_000,
  }, async () => {
    const reports: RunReport[] = [];
    let next = 0;
    const started = Date.now();
    await Promise.all(
      clusters.map(async (cluster) => {
        for (let at = next++; at < INDICES.length; at = next++) {
          const i = INDICES[at];
          const { kind, crash } = planRun(runRandom(SEED, i));
          const report = await crashRun(cluster, kind, crash, i);
          reports[at] = report;
          if (process.env.CRASH_LOG) appendFileSync(process.env.CRASH_LOG, `${JSON.stringify({ run: i, ...report })}\n`);
        }
      }),
    );
    console.log(JSON.stringify({ ...summary(reports), seconds: Math.round((Date.now() - started) / 1000) }));
    expect(reports.flatMap((r, at) => r.problems.map((p) => `run ${INDICES[at]} (${r.kind}, ${JSON.stringify(r.crash)}): ${p}`))).toEqual([]);
    // Not vacuous: the runs killed servers, and the tools ran.
    expect(reports.filter((r) => r.died).length).toBeGreaterThan(0);
  });
});
