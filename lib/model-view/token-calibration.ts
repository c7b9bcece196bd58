import type { TokenEstimate } from "./types.js";

/**
 * Safety margin before a model has reported any usage: Claude's tokenizer counts 20–30 % more than
 * cl100k on English prose and more on code, so the first view of a container keeps this much room.
 */
export const DEFAULT_INITIAL_TOKEN_MARGIN = 0.5;

/** The smallest safety margin, however settled the estimate. */
export const DEFAULT_MIN_TOKEN_MARGIN = 0.02;

/** Calls per model the estimate is learned from: the latest ones, so a change of content or model version is followed. */
export const DEFAULT_CALIBRATION_WINDOW = 50;

/**
 * Calls needed, with request sizes varying by at least `MIN_SIZE_SPREAD` (coefficient of variation),
 * before a fixed offset is fitted beside the ratio; until then the estimate is a ratio alone.
 */
const MIN_FIT_SAMPLES = 3;
const MIN_SIZE_SPREAD = 0.1;
/** A fitted offset larger than this share of the average count is not trusted (a ratio alone is used). */
const MAX_OFFSET_SHARE = 0.5;

export interface TokenCalibrationOptions {
  /** Default: `DEFAULT_INITIAL_TOKEN_MARGIN`. */
  initialMargin?: number;
  /** Default: `DEFAULT_MIN_TOKEN_MARGIN`. */
  minMargin?: number;
  /** Default: `DEFAULT_CALIBRATION_WINDOW`. */
  window?: number;
}

interface Sample {
  localTokens: number;
  modelTokens: number;
}

/** The relative error of an estimate against what the model reported. */
export function estimateError(estimated: number, reported: number): number {
  return (estimated - reported) / reported;
}

/**
 * The model's input tokens as `ratio × local + offset` of the local (cl100k) count, learned per model
 * from what the model reports (usage, or Bedrock's CountTokens): a least-squares line over the latest
 * calls once their sizes vary enough, a ratio of sums before that. The offset is what the model adds
 * to every request (Claude's tool-use system prompt is a few hundred tokens), which a ratio alone
 * would spread wrongly over small and large requests.
 *
 * The safety margin shrinks as the estimate settles: after n calls it is twice the largest relative
 * error the estimate makes on them, plus `initialMargin / n²` for content unlike what was seen,
 * within [`minMargin`, `initialMargin`].
 *
 * Kept in the container's memory (one instance per container, shared by its turns): the estimate is
 * a property of the model's tokenizer on this deployment's content, it settles within a few calls,
 * and a cold container starts from a safe margin rather than from a shared document that every call
 * would have to read and write.
 */
export class TokenCalibration {
  private readonly samples = new Map<string, Sample[]>();
  private readonly initialMargin: number;
  private readonly minMargin: number;
  private readonly window: number;

  constructor(options: TokenCalibrationOptions = {}) {
    this.initialMargin = options.initialMargin ?? DEFAULT_INITIAL_TOKEN_MARGIN;
    this.minMargin = Math.min(options.minMargin ?? DEFAULT_MIN_TOKEN_MARGIN, this.initialMargin);
    this.window = options.window ?? DEFAULT_CALIBRATION_WINDOW;
  }

  /** Calls of the model seen so far (within the window). */
  seen(modelId: string): number {
    return this.samples.get(modelId)?.length ?? 0;
  }

  estimate(modelId: string): TokenEstimate {
    const samples = this.samples.get(modelId) ?? [];
    if (samples.length === 0) return { ratio: 1, offset: 0, margin: this.initialMargin };
    const { ratio, offset } = fit(samples);
    let error = 0;
    for (const s of samples) error = Math.max(error, Math.abs(s.localTokens * ratio + offset - s.modelTokens) / s.modelTokens);
    const margin = 2 * error + this.initialMargin / samples.length ** 2;
    return { ratio, offset, margin: Math.min(this.initialMargin, Math.max(this.minMargin, margin)) };
  }

  /** Learns from one request: its local tokens (view and tool schemas) and the model's count of it. Ignores a count of zero (nothing reported). */
  observe(modelId: string, localTokens: number, modelTokens: number): void {
    if (!(localTokens > 0 && modelTokens > 0)) return;
    const samples = this.samples.get(modelId) ?? [];
    samples.push({ localTokens, modelTokens });
    if (samples.length > this.window) samples.shift();
    this.samples.set(modelId, samples);
  }
}

/** The least-squares line through the samples, or the ratio of their sums when the line is not well determined. */
function fit(samples: readonly Sample[]): { ratio: number; offset: number } {
  const n = samples.length;
  let sumX = 0;
  let sumY = 0;
  for (const s of samples) {
    sumX += s.localTokens;
    sumY += s.modelTokens;
  }
  const ratioOfSums = { ratio: sumY / sumX, offset: 0 };
  if (n < MIN_FIT_SAMPLES) return ratioOfSums;
  const meanX = sumX / n;
  const meanY = sumY / n;
  let sxx = 0;
  let sxy = 0;
  for (const s of samples) {
    sxx += (s.localTokens - meanX) ** 2;
    sxy += (s.localTokens - meanX) * (s.modelTokens - meanY);
  }
  if (Math.sqrt(sxx / n) / meanX < MIN_SIZE_SPREAD) return ratioOfSums;
  const ratio = sxy / sxx;
  const offset = meanY - ratio * meanX;
  return ratio > 0 && Math.abs(offset) <= MAX_OFFSET_SHARE * meanY ? { ratio, offset } : ratioOfSums;
}
