import { appendFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCrashCluster, type CrashCluster } from "../support/crash-harness.js";
import { crashRun, planRun, runRandom, type RunReport } from "../support/crash-runs.js";

/**
 * Random turns (plain, tool, approval, streamed, edit) on one MongoDB, the local server
 * SIGKILLed at a random fault point or moment of each and started again (docs/recovery.md,
 * "The crash test"). `npm test` runs a few seeded runs; `npm run test:crash` runs 200
 * (`CRASH_RUNS`, `CRASH_SEED` choose them).
 */
const RUNS = Number(process.env.CRASH_RUNS ?? "3");
const SEED = Number(process.env.CRASH_SEED ?? "30");

let cluster: CrashCluster;
beforeAll(async () => {
  cluster = await startCrashCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

describe("local server: random turns killed and recovered", () => {
  it(`ends every turn completed, failed with a code, or superseded, with effects at most once and record and thread agreeing (${RUNS} runs, seed ${SEED})`, {
    timeout: 60_000 + RUNS * 40_000,
  }, async () => {
    const reports: RunReport[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { kind, crash } = planRun(runRandom(SEED, i));
      const report = await crashRun(cluster, kind, crash, i);
      reports.push(report);
      if (process.env.CRASH_LOG) appendFileSync(process.env.CRASH_LOG, `${JSON.stringify({ run: i, ...report })}\n`);
    }
    const died = reports.filter((r) => r.died).length;
    const unknown = reports.reduce((n, r) => n + r.unknownOutcomes, 0);
    console.log(JSON.stringify({ runs: RUNS, seed: SEED, died, unknownOutcomes: unknown, kinds: reports.map((r) => r.kind).join(",") }));
    expect(reports.flatMap((r, i) => r.problems.map((p) => `run ${i} (${r.kind}, ${JSON.stringify(r.crash)}): ${p}`))).toEqual([]);
  });
});
