import { expect } from "vitest";
import fc from "fast-check";
import { ADVERSARIAL_CHARS, adversarialShape, runShapes, type AdversarialShape } from "./adversarial-text.js";

/** The large input is this many times the small one. */
export const SCALE = 8;
/**
 * Most the large input may cost per character against the small one: about 1 when the work is
 * linear (1.25 with a log factor; up to 2 seen when a garbage collection lands in every round),
 * SCALE when it is quadratic. Well above 1, so a loaded machine does not fail it; half of SCALE,
 * so quadratic work cannot pass.
 */
export const MAX_GROWTH = 4;
/** Most rounds; the least of them counts. Linear work usually stops after two (below), so the rest is spent only on a round a loaded machine spoiled. */
const ROUNDS = 8;
/** Each measurement repeats the runs until it spans about this long, far above the clock's resolution. */
const MIN_MEASURED_MICROS = 500;

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/**
 * The CPU time of one run on `chars` characters of the shape, divided by the CPU time of SCALE runs
 * on `chars / SCALE` characters: the same number of characters either way, so linear work gives
 * about 1 and quadratic work about SCALE. CPU time of this process, not wall time, and the least of
 * several interleaved rounds, so other processes and a garbage collection do not count.
 */
export function workGrowth(run: (text: string) => unknown, shape: AdversarialShape, chars = ADVERSARIAL_CHARS): number {
  const large = shape.text(chars);
  const small = shape.text(Math.ceil(chars / SCALE));
  run(small);
  let started = cpuMicros();
  run(large);
  const repeats = Math.min(1_000, Math.ceil(MIN_MEASURED_MICROS / Math.max(cpuMicros() - started, 1)));
  let largeBest = Infinity;
  let smallBest = Infinity;
  for (let round = 1; round <= ROUNDS; round++) {
    started = cpuMicros();
    for (let i = 0; i < repeats; i++) run(large);
    largeBest = Math.min(largeBest, cpuMicros() - started);
    started = cpuMicros();
    for (let i = 0; i < repeats * SCALE; i++) run(small);
    smallBest = Math.min(smallBest, cpuMicros() - started);
    // Far below the limit after two rounds: more rounds would not bring it near.
    if (round >= 2 && largeBest / Math.max(smallBest, 1) < MAX_GROWTH / 2) break;
  }
  return largeBest / Math.max(smallBest, 1);
}

export interface LinearWorkOptions {
  /** Makes the input `run` takes from an adversarial text (a request, an event envelope). Default: the text itself. */
  wrap?: (text: string) => string;
  /** Shapes checked every time. Default: a run of every unit of the pools, and the nestings. */
  shapes?: AdversarialShape[];
  /** Random shapes checked besides. Default: 12. */
  numRuns?: number;
}

/** A test timeout for `expectLinearWork`: it measures CPU time, which a loaded machine hands out slowly. */
export const LINEAR_WORK_TIMEOUT_MS = 180_000;

/**
 * Asserts that `run` does work linear in its input over adversarial shapes (runs of every
 * whitespace class, combining marks, emoji sequences, markup fragments, nesting, and random
 * mixtures of them), each given to `wrap` to become the input `run` takes.
 */
export function expectLinearWork(run: (input: string) => unknown, options: LinearWorkOptions = {}): void {
  const wrap = options.wrap ?? ((text: string) => text);
  const check = (shape: AdversarialShape) => {
    const growth = workGrowth((text) => run(wrap(text)), shape);
    expect(growth, `work on ${shape.name} grows faster than its length (×${growth.toFixed(1)} per character)`).toBeLessThan(MAX_GROWTH);
  };
  for (const shape of options.shapes ?? runShapes()) check(shape);
  fc.assert(fc.property(adversarialShape(), check), { numRuns: options.numRuns ?? 12, endOnFailure: true });
}
