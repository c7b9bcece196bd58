/**
 * The prompt-cache part of the context benchmark: every model call of a conversation is sent three
 * ways, through the real `ChatBedrockConverse`, each to its own local Converse endpoint (Claude's
 * published tokenizer, simulated Bedrock prompt cache with look-back, one controlled clock):
 *
 * - today: the view as it was before cache points (window moving one pair a turn, budget in cl100k);
 * - today + cache_control: the same view with `@langchain/aws`'s `cache_control` call option (cache
 *   points after the tools, the system prompt and the last message), what a LangChain user would add;
 * - cache-stable: the product's view now (history in blocks, cache points from `placeCachePoints`,
 *   budget in the model's tokens from a `TokenCalibration` fed with reported usage, as the graph does).
 */
import { ChatBedrockConverse } from "@langchain/aws";
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { reportedUsage } from "../lib/agent/model-usage.js";
import { DEFAULT_MODEL_PRICES, priceOf } from "../lib/config/model-config.js";
import { DEFAULT_PROMPT_CACHE_MIN_TOKENS } from "../lib/config/view-config.js";
import { ContextBudgetExceededError } from "../lib/errors.js";
import { buildModelView, estimateError, TokenCalibration, withCachePoints, type ModelViewPolicy } from "../lib/model-view/index.js";
import { prng } from "../lib/prng.js";
import { countClaudeTokens } from "../test/support/claude-tokens.js";
import {
  blockText,
  prefixesOf,
  startConverseEndpoint,
  type ConverseEndpoint,
  type ConverseRequest,
  type ScriptedReply,
} from "../test/support/converse-endpoint.js";
import { lineChart, type Panel, panelInRow } from "./support/line-chart.js";

export const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
const PRICE = priceOf(DEFAULT_MODEL_PRICES, MODEL_ID)!;
/** Between two model calls of a turn: the model's latency and the tools' time. */
export const CALL_GAP_MS = 6_000;
/** Between a turn's answer and the next question: log-uniform, so a few turns find a 5-minute cache expired. */
export const TURN_GAP_MS = { min: 15_000, max: 360_000 };

export const VARIANTS = ["today", "todayCacheControl", "cacheStable"] as const;
export type VariantKey = (typeof VARIANTS)[number];
export const VARIANT_LABELS: Record<VariantKey, string> = {
  today: "today's view",
  todayCacheControl: "today's view + cache_control",
  cacheStable: "cache-stable view",
};

/** One model call as the endpoint billed it. */
export interface BilledCall {
  turn: number;
  call: number;
  /** Every input token, cached ones included, in the model's (Claude's) tokens. */
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Local (cl100k) tokens of the view and tool schemas. */
  localTokens: number;
  /** The view's estimate of `inputTokens` and its relative error. */
  estimatedTokens: number;
  estimateError: number;
  margin: number;
  cachePoints: number;
  /** The longest prefix this request shares with any earlier request of the conversation: what any cache could have read. */
  sharedTokens: number;
  /** Input tokens outside the request's content blocks (tool schemas, tool-use system prompt, message framing). */
  otherTokens: number;
}

/** A content block (system text, question, answer, tool use, tool result) the requests of a conversation sent, and how many of them did. */
export interface SentBlock {
  tokens: number;
  requests: number;
}

export interface VariantRun {
  key: VariantKey;
  calls: BilledCall[];
  budgetErrors: number;
  /** Every distinct content block the variant sent, by its role and content. */
  blocks: Map<string, SentBlock>;
}

interface Variant extends VariantRun {
  /** Every prefix the variant's earlier requests held, by key. */
  sent: Set<string>;
  endpoint: ConverseEndpoint;
  model: ChatBedrockConverse;
  client: BedrockRuntimeClient;
}

function cachePointsOf(body: ConverseRequest): number {
  const blocks = [...(body.toolConfig?.tools ?? []), ...(body.system ?? []), ...body.messages.flatMap((m) => m.content)];
  return blocks.filter((b) => "cachePoint" in b).length;
}

/** Counts the request's distinct content blocks into `blocks`; returns their tokens (cache points left out). */
function countBlocks(blocks: Map<string, SentBlock>, body: ConverseRequest): number {
  const parts = [
    ...(body.system ?? []).flatMap((b) => ("text" in b ? [{ role: "system", text: b.text, block: b }] : [])),
    ...body.messages.flatMap((m) => m.content.flatMap((b) => ("cachePoint" in b ? [] : [{ role: m.role, text: blockText(b), block: b }]))),
  ];
  const seen = new Set<string>();
  let tokens = 0;
  for (const part of parts) {
    const key = `${part.role}\u0000${JSON.stringify(part.block)}`;
    const block = blocks.get(key) ?? { tokens: countClaudeTokens(part.text), requests: 0 };
    tokens += block.tokens;
    if (seen.has(key)) continue;
    seen.add(key);
    block.requests++;
    blocks.set(key, block);
  }
  return tokens;
}

function scripted(reply: AIMessage): ScriptedReply {
  const calls = reply.tool_calls ?? [];
  if (calls.length > 0) return { toolUses: calls.map((c) => ({ name: c.name, input: c.args, toolUseId: c.id })) };
  return { text: typeof reply.content === "string" ? reply.content : JSON.stringify(reply.content) };
}

export class CacheComparison {
  private readonly calibration = new TokenCalibration();
  private readonly gaps: () => number;
  private clockMs = Date.UTC(2026, 0, 5, 9);
  private reply: ScriptedReply = { text: "" };

  private constructor(
    private readonly variants: Variant[],
    private readonly policy: ModelViewPolicy,
    private readonly tools: unknown[],
    seed: number,
    private readonly layout: Required<Pick<ModelViewPolicy, "historyBlockTurns" | "cache">> & Pick<ModelViewPolicy, "turnDigest" | "parameterLedger">,
  ) {
    this.gaps = prng(seed);
  }

  /**
   * Starts one endpoint per variant; `policy` is today's view policy, which the cache-stable view gives `layout`
   * (blocks, cache points) and the calibration.
   */
  static async start(
    policy: ModelViewPolicy,
    tools: unknown[],
    seed: number,
    layout: Required<Pick<ModelViewPolicy, "historyBlockTurns" | "cache">> & Pick<ModelViewPolicy, "turnDigest" | "parameterLedger">,
  ): Promise<CacheComparison> {
    const variants: Variant[] = [];
    let comparison: CacheComparison | undefined;
    for (const key of VARIANTS) {
      const endpoint = await startConverseEndpoint({
        respond: () => (comparison as CacheComparison).reply,
        cache: { now: () => (comparison as CacheComparison).clockMs },
      });
      const credentials = { accessKeyId: "AKIDLOCALBENCH", secretAccessKey: "local-bench-secret" };
      const client = new BedrockRuntimeClient({ region: "us-east-1", endpoint: endpoint.url, credentials });
      const model = new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 2_048, temperature: 0, client });
      variants.push({ key, endpoint, client, model, calls: [], budgetErrors: 0, sent: new Set(), blocks: new Map() });
    }
    comparison = new CacheComparison(variants, policy, tools, seed, layout);
    return comparison;
  }

  /** The user takes a while to read the answer and ask the next question. */
  nextTurn(): void {
    const { min, max } = TURN_GAP_MS;
    this.clockMs += Math.round(Math.exp(Math.log(min) + this.gaps() * (Math.log(max) - Math.log(min))));
  }

  /** Sends the call's view, as each variant builds it, and bills what the model answers (`reply`, planned by the conversation). */
  async call(state: readonly BaseMessage[], turn: number, call: number, reply: AIMessage): Promise<void> {
    if (call > 1) this.clockMs += CALL_GAP_MS;
    this.reply = scripted(reply);
    for (const variant of this.variants) await this.send(variant, state, turn, call);
  }

  private async send(variant: Variant, state: readonly BaseMessage[], turn: number, call: number): Promise<void> {
    const stable = variant.key === "cacheStable";
    const policy: ModelViewPolicy = stable
      ? {
          ...this.policy,
          ...this.layout,
          tokenEstimate: this.calibration.estimate(MODEL_ID),
        }
      : { ...this.policy, historyBlockTurns: 1 };
    let view;
    try {
      view = buildModelView(state, policy);
    } catch (error) {
      if (!(error instanceof ContextBudgetExceededError)) throw error;
      variant.budgetErrors++;
      return;
    }
    const bound = variant.model.bindTools(this.tools as never);
    const messages = stable ? withCachePoints(view.messages, view.stats.cachePoints) : view.messages;
    const options = variant.key === "todayCacheControl" ? { cache_control: { type: "ephemeral" as const } } : {};
    const response = (await bound.invoke(messages, options)) as AIMessage;
    const usage = reportedUsage(response, PRICE);
    const localTokens = view.stats.viewTokens + view.stats.toolSchemaTokens;
    if (stable) this.calibration.observe(MODEL_ID, localTokens, usage.inputTokens);
    const request = variant.endpoint.requests[variant.endpoint.requests.length - 1];
    const prefixes = request.body ? prefixesOf(request.body) : [];
    const shared = prefixes.findLast((p) => variant.sent.has(p.key))?.tokens ?? 0;
    for (const p of prefixes) variant.sent.add(p.key);
    const blockTokens = request.body ? countBlocks(variant.blocks, request.body) : 0;
    variant.calls.push({
      turn,
      call,
      inputTokens: usage.inputTokens,
      cacheReadTokens: usage.cacheReadTokens ?? 0,
      cacheWriteTokens: usage.cacheWriteTokens ?? 0,
      outputTokens: usage.outputTokens,
      costUsd: usage.costUsd ?? 0,
      localTokens,
      estimatedTokens: view.stats.estimatedInputTokens,
      estimateError: estimateError(view.stats.estimatedInputTokens, usage.inputTokens),
      margin: view.stats.tokenEstimate.margin,
      cachePoints: request.body ? cachePointsOf(request.body) : 0,
      sharedTokens: shared,
      otherTokens: usage.inputTokens - blockTokens,
    });
  }

  results(): VariantRun[] {
    return this.variants.map(({ key, calls, budgetErrors, blocks }) => ({ key, calls, budgetErrors, blocks }));
  }

  async close(): Promise<void> {
    for (const variant of this.variants) {
      variant.client.destroy();
      await variant.endpoint.close();
    }
  }
}

/** Totals of one variant over a conversation. */
export interface CacheSummary {
  key: VariantKey;
  calls: number;
  turns: number;
  inputTokens: number;
  cachedShare: number;
  writtenShare: number;
  dollarsPerTurn: number;
  /** The part of `dollarsPerTurn` paid for output tokens, which no cache changes. */
  outputDollarsPerTurn: number;
  /**
   * The least any placement of cache points could cost with the same requests: each request's prefix
   * shared with an earlier one read at the cache price, the rest at the input price (no minimum, no expiry).
   */
  floorDollarsPerTurn: number;
  /** The most any placement could read from cache: the share of input tokens an earlier request already held. */
  sharedShare: number;
  /**
   * The least any caching of the same content could cost, wherever each block stood: each distinct content
   * block paid once at the input price if one request sent it, else written once and read by every other
   * request that sent it (Bedrock reads only what a request wrote), whichever is cheaper; the tokens
   * outside the blocks (tool schemas, framing) read from cache after the first call; no minimum, no expiry.
   */
  contentFloorDollarsPerTurn: number;
  inputTokensPerCall: number;
  maxInputTokens: number;
  /** Largest |estimate error| from the fourth call on. */
  maxErrorAfterThird: number;
  /** Largest |estimate error| over the first three calls. */
  maxErrorFirstThree: number;
  budgetErrors: number;
}

export function summarize(run: VariantRun, turns: number): CacheSummary {
  const sum = (pick: (c: BilledCall) => number) => run.calls.reduce((n, c) => n + pick(c), 0);
  const inputTokens = sum((c) => c.inputTokens);
  const errors = run.calls.map((c) => Math.abs(c.estimateError));
  return {
    key: run.key,
    calls: run.calls.length,
    turns,
    inputTokens,
    cachedShare: sum((c) => c.cacheReadTokens) / inputTokens,
    writtenShare: sum((c) => c.cacheWriteTokens) / inputTokens,
    dollarsPerTurn: sum((c) => c.costUsd) / turns,
    outputDollarsPerTurn: (sum((c) => c.outputTokens) * PRICE.output) / 1_000_000 / turns,
    sharedShare: sum((c) => c.sharedTokens) / inputTokens,
    floorDollarsPerTurn:
      sum((c) => c.outputTokens * PRICE.output + c.sharedTokens * PRICE.cacheRead + (c.inputTokens - c.sharedTokens) * PRICE.input) / 1_000_000 / turns,
    contentFloorDollarsPerTurn: contentFloor(run) / 1_000_000 / turns,
    inputTokensPerCall: inputTokens / run.calls.length,
    maxInputTokens: Math.max(...run.calls.map((c) => c.inputTokens)),
    maxErrorAfterThird: Math.max(0, ...errors.slice(3)),
    maxErrorFirstThree: Math.max(0, ...errors.slice(0, 3)),
    budgetErrors: run.budgetErrors,
  };
}

/** Where a variant's dollars per turn go, by kind of token, and the calls that found nothing to read. */
export interface CostBreakdown {
  output: number;
  read: number;
  /** Writes a later call could read: every write but those below. */
  writtenThenRead: number;
  /** Writes of a turn's last call after its previous call's end (the tool results the next turn condenses away): no call reads them. */
  writtenNeverRead: number;
  /** Input neither read nor written: requests or tails under the minimum per checkpoint, and views without cache points. */
  notCached: number;
  /** First calls of a turn whose prefix shared with earlier requests stops at the tools and system prompt: the history block moved. */
  blockMoves: number;
  /** First calls that shared at least `DEFAULT_PROMPT_CACHE_MIN_TOKENS` with an earlier request and read none of it: the entry had expired. */
  expired: number;
  /** Tokens of the calls counted in `expired`, written again. */
  expiredTokens: number;
}

export function costBreakdown(run: VariantRun, turns: number): CostBreakdown {
  const perTurn = (dollarsPerMillion: number) => dollarsPerMillion / 1_000_000 / turns;
  const sum = (calls: BilledCall[], pick: (c: BilledCall) => number) => calls.reduce((n, c) => n + pick(c), 0);
  const notCached = (c: BilledCall) => c.inputTokens - c.cacheReadTokens - c.cacheWriteTokens;
  // What the writes cost, whatever their TTL: the call's cost less everything else in it.
  const writes = (c: BilledCall) =>
    c.cacheWriteTokens === 0 ? 0 : c.costUsd * 1_000_000 - c.outputTokens * PRICE.output - c.cacheReadTokens * PRICE.cacheRead - notCached(c) * PRICE.input;
  const last = new Map(run.calls.map((c) => [c.turn, c]));
  const neverRead = sum(
    run.calls.filter((c) => c.call > 1 && last.get(c.turn) === c),
    writes,
  );
  const firstCalls = run.calls.filter((c) => c.call === 1);
  const systemShared = Math.min(...firstCalls.filter((c) => c.sharedTokens > 0).map((c) => c.sharedTokens));
  const expired = firstCalls.filter((c) => c.sharedTokens >= DEFAULT_PROMPT_CACHE_MIN_TOKENS && c.cacheReadTokens === 0 && c.cachePoints > 0);
  return {
    output: perTurn(sum(run.calls, (c) => c.outputTokens) * PRICE.output),
    read: perTurn(sum(run.calls, (c) => c.cacheReadTokens) * PRICE.cacheRead),
    writtenThenRead: perTurn(sum(run.calls, writes) - neverRead),
    writtenNeverRead: perTurn(neverRead),
    notCached: perTurn(sum(run.calls, notCached) * PRICE.input),
    blockMoves: firstCalls.filter((c) => c.turn > 1 && c.sharedTokens === systemShared).length,
    expired: expired.length,
    expiredTokens: sum(expired, (c) => c.inputTokens),
  };
}

/** `CacheSummary.contentFloorDollarsPerTurn` over the whole run, in dollars × 1,000,000. */
function contentFloor(run: VariantRun): number {
  let dollars = 0;
  for (const { tokens, requests } of run.blocks.values()) {
    dollars += tokens * Math.min(requests * PRICE.input, requests === 1 ? PRICE.input : PRICE.cacheWrite + (requests - 1) * PRICE.cacheRead);
  }
  run.calls.forEach((c, i) => {
    dollars += c.outputTokens * PRICE.output + c.otherTokens * (i === 0 ? PRICE.input : PRICE.cacheRead);
  });
  return dollars;
}

/** The turns labelled on the axis of a conversation of `turns` turns (50 or 200). */
export const turnTicks = (turns: number): number[] => (turns <= 50 ? [1, 10, 20, 30, 40, 50] : [1, 25, 50, 75, 100, 125, 150, 175, 200]);

/** Dollars spent up to each turn: one panel per conversation, one line per variant. */
export function costChart(runs: { turns: number; variants: VariantRun[] }[]): string {
  const panelWidth = 520;
  const panelHeight = 320;
  const margin = { left: 70, right: 20, top: 40, bottom: 50 };
  const styles: Record<VariantKey, { color: string; dash?: string }> = {
    today: { color: "#d6336c" },
    todayCacheControl: { color: "#f08c00", dash: "6 4" },
    cacheStable: { color: "#1c7ed6" },
  };
  const cumulative = (run: VariantRun, turns: number) => {
    const dollars = new Array<number>(turns).fill(0);
    for (const c of run.calls) dollars[c.turn - 1] += c.costUsd;
    for (let t = 1; t < turns; t++) dollars[t] += dollars[t - 1];
    return dollars;
  };
  const panels = runs.map((run, p): Panel => {
    const series = run.variants.map((v) => ({ key: v.key, dollars: cumulative(v, run.turns) }));
    const top = Math.max(...series.flatMap((s) => s.dollars)) * 1.05;
    const rough = top / 5;
    const magnitude = 10 ** Math.floor(Math.log10(rough));
    const step = [1, 2, 5, 10].map((m) => m * magnitude).find((m) => m >= rough) as number;
    const dollarTicks = Array.from({ length: Math.floor(top / step) + 1 }, (_, i) => i * step);
    return {
      ...panelInRow(p, panelWidth, panelHeight, margin),
      title: `${run.turns} turns: model cost so far`,
      x: { min: 1, max: Math.max(2, run.turns), ticks: turnTicks(run.turns).map((turn) => ({ value: turn, label: String(turn) })), title: "turn" },
      y: { min: 0, max: top, ticks: dollarTicks.map((d) => ({ value: d, label: `$${d.toFixed(2)}` })) },
      series: series.map((s) => ({ ...styles[s.key], width: 1.6, points: s.dollars.map((d, i) => ({ x: i + 1, y: d })) })),
    };
  });
  return lineChart({
    width: panelWidth * runs.length,
    height: panelHeight + 40,
    panels,
    legend: { x: margin.left, y: panelHeight + 22, spacing: 260, entries: VARIANTS.map((key) => ({ ...styles[key], label: VARIANT_LABELS[key] })) },
  });
}
