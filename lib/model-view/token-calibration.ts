import type { TokenEstimate } from "./types.js";

/**
 * Safety margin before a model has reported any usage: Claude's tokenizer counts 20–30 % more than
 * cl100k on English prose and more on code, so the first view of a container keeps this much room.
 */
export const DEFAULT_INITIAL_TOKEN_MARGIN = 0.5;

/** The smallest safety margin, however settled the estimate. */
export const DEFAULT_MIN_TOKEN_MARGIN = 0.02;

/** Calls per model the ratio is learned from: the latest ones, so a change of content or model version is followed. */
export const DEFAULT_CALIBRATION_WINDOW = 50;

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
 * The model's input tokens per local (cl100k) token, learned per model from what the model reports
 * (usage, or Bedrock's CountTokens), with a safety margin that shrinks as the estimate settles:
 * after n calls it is twice the largest relative deviation of one call's ratio from the estimate,
 * plus `initialMargin / n²` for content unlike what was seen, within [`minMargin`, `initialMargin`].
 *
 * Kept in the container's memory (one instance per container, shared by its turns): the ratio is a
 * property of the model's tokenizer on this deployment's content, it settles within a few calls, and
 * a cold container starts from a safe margin rather than from a shared document every call would
 * have to read and write.
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
    if (samples.length === 0) return { ratio: 1, margin: this.initialMargin };
    let local = 0;
    let model = 0;
    for (const s of samples) {
      local += s.localTokens;
      model += s.modelTokens;
    }
    const ratio = model / local;
    let deviation = 0;
    for (const s of samples) deviation = Math.max(deviation, Math.abs(s.modelTokens / s.localTokens / ratio - 1));
    const margin = 2 * deviation + this.initialMargin / samples.length ** 2;
    return { ratio, margin: Math.min(this.initialMargin, Math.max(this.minMargin, margin)) };
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
