/**
 * How many cases a fast-check property runs: `runs` in `npm test`; scaled by `PROPERTY_RUNS_FACTOR`
 * when set (a mutation run sets it for modules whose property tests would otherwise take an hour:
 * docs/mutation-testing.md), never under one.
 */
export function propertyRuns(runs: number): number {
  const factor = Number(process.env.PROPERTY_RUNS_FACTOR ?? "1");
  if (!Number.isFinite(factor) || factor <= 0) throw new Error(`PROPERTY_RUNS_FACTOR must be a positive number, not ${process.env.PROPERTY_RUNS_FACTOR}`);
  return Math.max(1, Math.round(runs * factor));
}
