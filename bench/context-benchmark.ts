/**
 * Context benchmark: for every model call of a synthetic conversation, the tokens of the shaped
 * model view (`buildModelView` with the default policy) against full replay (every stored message
 * with every tool output inline, as stock LangGraph sends it), and the time to build the view.
 *
 *   npm run bench:context [-- --seed 7] [-- --turns 200 (one conversation only)] [-- --block-turns 6 (VIEW_HISTORY_BLOCK_TURNS)] [-- --turn-digest off]
 *     [-- --stable-ttl 5m|1h] [-- --turn-ttl 5m|1h (PROMPT_CACHE_STABLE_TTL, PROMPT_CACHE_TURN_TTL)] [-- --write (results to bench/results)]
 *
 * The view measured is the product's default: history in blocks of turns, cache points. Every model
 * call is also sent three ways to the local Converse endpoint with the simulated prompt cache
 * (`bench/prompt-cache-comparison.ts`): today's view, today's view with `cache_control`, and the
 * cache-stable view, for the share of input read from cache, dollars per turn and tokens per call.
 *
 * Conversations of 50 and 200 turns, generated from a seeded PRNG: each turn is a question, zero
 * to two rounds of tool calls (one or two in parallel, outputs of 1 KB to 100 KB, log-uniform),
 * sometimes a `read_tool_output` call after a notice, then a final answer. Outputs over the
 * per-output threshold are offloaded as the product does (preview and artifact reference in the
 * ToolMessage). Tokens are cl100k_base counts; both sides include the system prompt and the tool
 * schemas.
 *
 * Build time is measured two ways at every call: on the live message objects (counts memoised
 * per object from earlier calls) and on a rehydrated copy (new objects, as a checkpoint load
 * gives each invocation; per-text memo warm, as in a warm container).
 */
import { randomUUID } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { DEFAULT_SYSTEM_PROMPT } from "../lib/agent/system-prompt.js";
import { ContextBudgetExceededError } from "../lib/errors.js";
import {
  DEFAULT_PROMPT_CACHE_MIN_TOKENS,
  DEFAULT_PROMPT_CACHE_TTL,
  DEFAULT_VIEW_FINISHED_TURNS,
  DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
  DEFAULT_VIEW_TOOL_OUTPUT_TOKENS,
  DEFAULT_VIEW_TOTAL_BUDGET,
} from "../lib/config/view-config.js";
import {
  buildModelView,
  countMessageTokens,
  countTextTokens,
  DEFAULT_PARAMETER_LEDGER,
  DEFAULT_TURN_DIGEST,
  MESSAGE_OVERHEAD_TOKENS,
  type ModelViewPolicy,
} from "../lib/model-view/index.js";
import { previewOf } from "../lib/store/artifact-store.js";
import { prng } from "../lib/prng.js";
import {
  CALL_GAP_MS,
  CacheComparison,
  costBreakdown,
  costChart,
  TURN_GAP_MS,
  turnTicks,
  summarize,
  VARIANT_LABELS,
  type CacheSummary,
  type VariantRun,
} from "./prompt-cache-comparison.js";
import { lineChart, type LineSeries, type Panel, panelInRow } from "./support/line-chart.js";
import { quantile } from "./support/statistics.js";
import { writeResults } from "./support/results.js";

const CONVERSATION_TURNS = [50, 200];
const MIN_OUTPUT_BYTES = 1_024;
const MAX_OUTPUT_BYTES = 100 * 1_024;
/** Context window of the target model (Claude Sonnet 4 on Bedrock), to show where full replay stops fitting. */
const CONTEXT_WINDOW_TOKENS = 200_000;
/** Repeated builds of the last state, for the median and p95 at the last turn. */
const TIMING_REPEATS = 400;
const TARGET_RATIO_TURN = 50;
const TARGET_RATIO = 20;
const TARGET_BUILD_MS = 2;
/** The issue's prompt-cache targets, over the 50-turn conversation (share and cost) and every call (budget, estimate). */
const TARGET_CACHED_SHARE = 0.7;
const TARGET_COST_RATIO = 0.4;
const TARGET_ESTIMATE_ERROR = 0.05;

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];
const int = (random: Random, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));

const REGIONS = ["north", "south", "east", "west", "central"];
const PRODUCTS = ["widgets", "gadgets", "sprockets", "gizmos", "doohickeys", "thingamajigs"];
const WORDS = (
  "the margin revenue customers quarter region decline growth because orders pricing discount mix shipped " +
  "returns cost forecast above below compared previous month drove mostly largest accounts segment"
).split(" ");

/** The tools offered to the model, in the shape `bindTools` gets, for the schema tokens. */
const TOOLS = [
  {
    name: "sql_query",
    description: "Run a read-only SQL query on the sales database.",
    parameters: { type: "object", properties: { query: { type: "string" }, maxRows: { type: "integer" } }, required: ["query"] },
  },
  {
    name: "search_documents",
    description: "Search the document index and return matching passages.",
    parameters: { type: "object", properties: { query: { type: "string" }, top: { type: "integer" } }, required: ["query"] },
  },
  {
    name: "power_bi_query",
    description: "Evaluate a DAX query against the Power BI semantic model.",
    parameters: { type: "object", properties: { dax: { type: "string" } }, required: ["dax"] },
  },
  {
    name: "read_tool_output",
    description: "Read part of a tool output that was replaced by a notice: a range of lines, or the lines matching a search.",
    parameters: {
      type: "object",
      properties: { handle: { type: "string" }, startLine: { type: "integer" }, lineCount: { type: "integer" }, search: { type: "string" } },
      required: ["handle"],
    },
  },
].map((t) => ({ type: "function", function: t }));

function prose(random: Random, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(pick(random, WORDS));
  return `${out.join(" ")}.`;
}

/** A tabular tool output of about `bytes` bytes, with varied values (so tokens are realistic). */
function tableOutput(random: Random, bytes: number): string {
  const lines = ["date,region,customer,product,units,revenue,margin"];
  let size = lines[0].length;
  while (size < bytes) {
    const date = `2026-${String(int(random, 1, 12)).padStart(2, "0")}-${String(int(random, 1, 28)).padStart(2, "0")}`;
    const line = [
      date,
      pick(random, REGIONS),
      `customer-${int(random, 1, 4_000)}`,
      pick(random, PRODUCTS),
      int(random, 1, 900),
      (random() * 90_000).toFixed(2),
      (random() * 0.6 - 0.1).toFixed(3),
    ].join(",");
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n").slice(0, bytes);
}

function outputBytes(random: Random): number {
  return Math.round(Math.exp(Math.log(MIN_OUTPUT_BYTES) + random() * (Math.log(MAX_OUTPUT_BYTES) - Math.log(MIN_OUTPUT_BYTES))));
}

interface CallSample {
  turn: number;
  call: number;
  viewTokens: number;
  fullReplayTokens: number;
  stateTokens: number;
  buildMs: number;
  rehydratedBuildMs: number;
  finishedTurnsKept: number;
  notices: number;
}

interface Timing {
  median: number;
  p95: number;
  max: number;
}

/** Wall-clock and CPU time (process user + system, which other load on the machine does not inflate). */
interface Measured {
  wall: Timing;
  cpu: Timing;
}

interface Run {
  turns: number;
  seed: number;
  samples: CallSample[];
  budgetErrors: number;
  offloadedOutputs: number;
  toolOutputs: number;
  /** Builds of the last model call of the last turn, repeated. */
  lastTurnLive: Measured;
  lastTurnRehydrated: Measured;
  /** Tokenizing the whole state once: what a build costs on top when nothing is memoised (a new container). */
  lastTurnCold: Measured;
  lastStateMessages: number;
  lastStateChars: number;
  /** Every model call as each variant of the view sent it and the simulated cache billed it. */
  cache: VariantRun[];
}

function timing(values: number[]): Timing {
  return { median: quantile(values, 0.5), p95: quantile(values, 0.95), max: Math.max(...values) };
}

/** A deep copy, as deserializing a checkpoint gives: new strings with the same contents. */
function fresh<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** New message objects with the same fields, as a checkpoint load produces for each invocation. */
function rehydrate(messages: readonly BaseMessage[]): BaseMessage[] {
  return messages.map((m) => {
    if (m.type === "human") return new HumanMessage({ content: fresh(m.content), id: m.id });
    if (m.type === "ai") return new AIMessage({ content: fresh(m.content), id: m.id, tool_calls: fresh((m as AIMessage).tool_calls) });
    const tool = m as ToolMessage;
    return new ToolMessage({ content: fresh(tool.content), tool_call_id: tool.tool_call_id, name: tool.name, artifact: fresh(tool.artifact), id: tool.id });
  });
}

/** Tokenizes every text of the state once, as a build does when nothing is memoised. */
function countEveryText(messages: readonly BaseMessage[]): void {
  for (const m of messages) {
    countTextTokens(typeof m.content === "string" ? m.content : JSON.stringify(m.content));
    for (const call of (m as AIMessage).tool_calls ?? []) countTextTokens(JSON.stringify(call.args));
  }
}

async function runConversation(turns: number, seed: number, policy: ModelViewPolicy, comparisonPolicy: ModelViewPolicy): Promise<Run> {
  const random = prng(seed);
  const comparison = await CacheComparison.start(comparisonPolicy, TOOLS, seed + 1, {
    historyBlockTurns: policy.historyBlockTurns ?? DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
    cache: policy.cache ?? { minTokensPerCheckpoint: DEFAULT_PROMPT_CACHE_MIN_TOKENS, stableTtl: DEFAULT_PROMPT_CACHE_TTL, turnTtl: DEFAULT_PROMPT_CACHE_TTL },
    turnDigest: policy.turnDigest,
    parameterLedger: policy.parameterLedger,
  });
  const state: BaseMessage[] = [];
  const fixedTokens = countMessageTokens(new SystemMessage(policy.systemPrompt)) + (policy.toolSchemaTokens ?? 0);
  // Stock replay sends every message with its output inline; kept as a running sum.
  let storedReplayTokens = 0;
  const samples: CallSample[] = [];
  let budgetErrors = 0;
  let offloadedOutputs = 0;
  let toolOutputs = 0;
  let nextId = 0;

  const append = (stored: BaseMessage, replayTokens: number) => {
    // As LangGraph's messages reducer does: every message in state gets an id, kept in checkpoints.
    stored.id ??= randomUUID();
    state.push(stored);
    storedReplayTokens += replayTokens;
  };

  /** One model call: the view's figures, then the call sent three ways with the answer the conversation gives next. */
  const modelCall = async (turn: number, call: number, reply: AIMessage) => {
    await comparison.call(state, turn, call, reply);
    let started = performance.now();
    let view;
    try {
      view = buildModelView(state, policy);
    } catch (error) {
      // The product fails the turn here; the benchmark counts it against the target and goes on.
      if (!(error instanceof ContextBudgetExceededError)) throw error;
      budgetErrors++;
      return;
    }
    const buildMs = performance.now() - started;
    const copy = rehydrate(state);
    started = performance.now();
    buildModelView(copy, policy);
    const rehydratedBuildMs = performance.now() - started;
    samples.push({
      turn,
      call,
      viewTokens: view.stats.viewTokens + view.stats.toolSchemaTokens,
      fullReplayTokens: fixedTokens + storedReplayTokens,
      stateTokens: view.stats.stateTokens,
      buildMs,
      rehydratedBuildMs,
      finishedTurnsKept: view.stats.finishedTurnsKept,
      notices: view.stats.omittedOutputs.length,
    });
  };

  for (let turn = 1; turn <= turns; turn++) {
    comparison.nextTurn();
    const question = new HumanMessage(
      `Turn ${turn}: ${prose(random, int(random, 12, 40))} What happened in ${pick(random, REGIONS)} for ${pick(random, PRODUCTS)}?`,
    );
    append(question, countMessageTokens(question));
    let call = 1;
    const rounds = random() < 0.15 ? 0 : int(random, 1, 2);
    let lastHandle: string | undefined;
    for (let round = 0; round < rounds; round++) {
      const parallel = int(random, 1, 2);
      const toolCalls = Array.from({ length: parallel }, () => {
        const name = pick(random, ["sql_query", "search_documents", "power_bi_query"]);
        return { id: `call-${nextId++}`, name, args: { query: prose(random, 8) }, type: "tool_call" as const };
      });
      const assistant = new AIMessage({ content: "", tool_calls: toolCalls });
      await modelCall(turn, call++, assistant);
      append(assistant, countMessageTokens(assistant));
      for (const toolCall of toolCalls) {
        const output = tableOutput(random, outputBytes(random));
        const tokens = countTextTokens(output);
        const inline = new ToolMessage({ content: output, tool_call_id: toolCall.id, name: toolCall.name });
        // The stock side stores and replays the output itself; tokens counted once.
        const replayTokens = MESSAGE_OVERHEAD_TOKENS + tokens;
        toolOutputs++;
        if (tokens > policy.toolOutputTokens) {
          const handle = `art_${seed}_${toolCall.id}`;
          const preview = previewOf(output);
          append(
            new ToolMessage({
              content: preview,
              tool_call_id: toolCall.id,
              name: toolCall.name,
              artifact: { handle, bytes: Buffer.byteLength(output), tokens, preview },
            }),
            replayTokens,
          );
          offloadedOutputs++;
          lastHandle = handle;
        } else append(inline, replayTokens);
      }
    }
    if (lastHandle && random() < 0.4) {
      // The model follows a notice and reads a bounded part of the offloaded output.
      const read = {
        id: `call-${nextId++}`,
        name: "read_tool_output",
        args: { handle: lastHandle, search: pick(random, REGIONS) },
        type: "tool_call" as const,
      };
      const assistant = new AIMessage({ content: "", tool_calls: [read] });
      await modelCall(turn, call++, assistant);
      append(assistant, countMessageTokens(assistant));
      const part = new ToolMessage({ content: tableOutput(random, int(random, 1_000, 5_000)), tool_call_id: read.id, name: read.name });
      append(part, countMessageTokens(part));
    }
    const answer = new AIMessage(prose(random, int(random, 60, 220)));
    await modelCall(turn, call++, answer);
    append(answer, countMessageTokens(answer));
  }
  await comparison.close();

  // Median and p95 at the last turn: repeat its last model call's build on the final state.
  const lastState = state.slice(0, -1);
  const live = measurer();
  const rehydrated = measurer();
  for (let i = 0; i < TIMING_REPEATS; i++) {
    live.run(() => buildModelView(lastState, policy));
    const copy = rehydrate(lastState);
    rehydrated.run(() => buildModelView(copy, policy));
  }
  const cold = measurer();
  for (let i = 0; i < 5; i++) cold.run(() => countEveryText(lastState));
  return {
    turns,
    seed,
    samples,
    budgetErrors,
    offloadedOutputs,
    toolOutputs,
    lastTurnLive: live.result(),
    lastTurnRehydrated: rehydrated.result(),
    lastTurnCold: cold.result(),
    lastStateMessages: lastState.length,
    lastStateChars: lastState.reduce((n, m) => n + (typeof m.content === "string" ? m.content.length : JSON.stringify(m.content).length), 0),
    cache: comparison.results(),
  };
}

/** Collects wall-clock and CPU time of repeated runs. */
function measurer(): { run(fn: () => unknown): void; result(): Measured } {
  const wall: number[] = [];
  const cpu: number[] = [];
  return {
    run(fn) {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      fn();
      wall.push(performance.now() - started);
      const used = process.cpuUsage(cpuBefore);
      cpu.push((used.user + used.system) / 1_000);
    },
    result: () => ({ wall: timing(wall), cpu: timing(cpu) }),
  };
}

const measured = (m: Measured) => `median ${ms(m.wall.median)} ms, p95 ${ms(m.wall.p95)} ms (CPU median ${ms(m.cpu.median)} ms, p95 ${ms(m.cpu.p95)} ms)`;
const perCall = (run: Run, key: "buildMs" | "rehydratedBuildMs"): Timing => timing(run.samples.map((s) => s[key]));
const fmt = (n: number) => n.toLocaleString("en-US");
const ms = (n: number) => n.toFixed(3);

function reportedTurns(turns: number): number[] {
  return turns <= 50 ? [1, 2, 5, 10, 20, 30, 40, 50] : [1, 10, 25, 50, 75, 100, 125, 150, 175, 200];
}

/** One row per reported turn: the turn's last model call (the largest state of the turn). */
function table(run: Run): string[] {
  const rows = [
    "| turn | model calls so far | shaped view (tokens) | full replay (tokens) | full / view | finished pairs " +
      "kept | notices | build, live (ms) | build, rehydrated (ms) |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const turn of reportedTurns(run.turns)) {
    const index = run.samples.findLastIndex((s) => s.turn === turn);
    const s = run.samples[index];
    const over = s.fullReplayTokens > CONTEXT_WINDOW_TOKENS ? " ⚠" : "";
    rows.push(
      `| ${turn} | ${index + 1} | ${fmt(s.viewTokens)} | ${fmt(s.fullReplayTokens)}${over} | ` +
        `${(s.fullReplayTokens / s.viewTokens).toFixed(1)}× | ${s.finishedTurnsKept} | ${s.notices} | ` +
        `${ms(s.buildMs)} | ${ms(s.rehydratedBuildMs)} |`,
    );
  }
  return rows;
}

interface Verdicts {
  neverOverBudget: boolean;
  ratioAtTurn50: number;
  buildAtLastTurn: number;
  /** The cache-stable view against today's over the first conversation (50 turns). */
  cachedShare: number;
  costRatio: number;
  /** Every call of the cache-stable view within the budget in Claude's tokens, none refused. */
  neverOverModelBudget: boolean;
  /** Largest |estimate error| after the third call, over every conversation. */
  estimateErrorAfterThird: number;
}

function cacheSummaries(run: Run): CacheSummary[] {
  return run.cache.map((v) => summarize(v, run.turns));
}

function summaryOf(summaries: CacheSummary[], key: CacheSummary["key"]): CacheSummary {
  return summaries.find((s) => s.key === key) as CacheSummary;
}

function verdicts(runs: Run[], budget: number): Verdicts {
  const stable = (run: Run) => summaryOf(cacheSummaries(run), "cacheStable");
  const all = runs.flatMap((r) => r.samples);
  const atTurn50 = all.filter((s) => s.turn === TARGET_RATIO_TURN);
  const longest = runs[runs.length - 1];
  return {
    neverOverBudget: runs.every((r) => r.budgetErrors === 0) && all.every((s) => s.viewTokens <= budget),
    ratioAtTurn50: Math.min(...atTurn50.map((s) => s.fullReplayTokens / s.viewTokens)),
    buildAtLastTurn: Math.max(longest.lastTurnLive.wall.median, longest.lastTurnRehydrated.wall.median),
    cachedShare: stable(runs[0]).cachedShare,
    costRatio: stable(runs[0]).dollarsPerTurn / summaryOf(cacheSummaries(runs[0]), "today").dollarsPerTurn,
    neverOverModelBudget: runs.every((r) => stable(r).budgetErrors === 0 && stable(r).maxInputTokens <= budget),
    estimateErrorAfterThird: Math.max(...runs.map((r) => stable(r).maxErrorAfterThird)),
  };
}

function markdown(runs: Run[], policy: ModelViewPolicy, seed: number, encoderLoadMs: number): string {
  const v = verdicts(runs, policy.totalBudget);
  const all = runs.flatMap((r) => r.samples);
  const maxView = Math.max(...all.map((s) => s.viewTokens));
  const firstOverWindow = (r: Run) => r.samples.find((s) => s.fullReplayTokens > CONTEXT_WINDOW_TOKENS)?.turn;
  const check = (ok: boolean) => (ok ? "✅" : "❌");
  const last = runs[runs.length - 1];
  const lines = [
    "# Context benchmark",
    "",
    `Generated by \`npm run bench:context -- --write\` (seed ${seed}, Node ${process.version}, ${cpus().length} ` +
      `CPUs, load average ${loadavg()[0].toFixed(1)} when it finished). Tokens are cl100k_base counts and include ` +
      `the system prompt and the tool schemas (${fmt(policy.toolSchemaTokens ?? 0)} tokens) on both sides.`,
    `Policy: the defaults — ${policy.finishedTurns} finished turns kept, ${fmt(policy.toolOutputTokens)}-token ` +
      `per-output threshold, ${fmt(policy.totalBudget)}-token total budget.`,
    "Full replay is every stored message with every tool output inline, as stock LangGraph sends it.",
    "",
    "![shaped view and full replay tokens per model call](context.svg)",
    "",
    "## Targets",
    "",
    "| target | measured | |",
    "|---|---|---|",
    `| the view never exceeds the budget | largest view ${fmt(maxView)} of ${fmt(policy.totalBudget)} tokens ` +
      `over ${fmt(all.length)} model calls; ${runs.reduce((n, r) => n + r.budgetErrors, 0)} budget errors | ` +
      `${check(v.neverOverBudget)} |`,
    `| at turn ${TARGET_RATIO_TURN}, full replay ≥ ${TARGET_RATIO}× the view | ${v.ratioAtTurn50.toFixed(1)}× ` +
      `(smallest over the model calls of turn ${TARGET_RATIO_TURN}, both conversations) | ` +
      `${check(v.ratioAtTurn50 >= TARGET_RATIO)} |`,
    `| building the view at turn ${last.turns} < ${TARGET_BUILD_MS} ms (median) | live objects: ` +
      `${measured(last.lastTurnLive)}; rehydrated: ${measured(last.lastTurnRehydrated)} | ` +
      `${check(v.buildAtLastTurn < TARGET_BUILD_MS)} |`,
    `| prompt cache: ≥ ${pct(TARGET_CACHED_SHARE)} of input tokens read from cache over ${runs[0].turns} turns | ` +
      `${pct(v.cachedShare)} | ${check(v.cachedShare >= TARGET_CACHED_SHARE)} |`,
    `| prompt cache: cost per turn ≤ ${pct(TARGET_COST_RATIO)} of today's view over ${runs[0].turns} turns | ` +
      `${pct(v.costRatio)} | ${check(v.costRatio <= TARGET_COST_RATIO)} |`,
    `| the cache-stable view never over the budget in Claude's tokens | largest input ` +
      `${fmt(Math.max(...runs.map((r) => summaryOf(cacheSummaries(r), "cacheStable").maxInputTokens)))} of ` +
      `${fmt(policy.totalBudget)} (as the endpoint counted it) | ${check(v.neverOverModelBudget)} |`,
    `| the token estimate within ${pct(TARGET_ESTIMATE_ERROR)} of reported usage after the third call | largest ` +
      `error ${pct(v.estimateErrorAfterThird)} | ${check(v.estimateErrorAfterThird <= TARGET_ESTIMATE_ERROR)} |`,
    "",
    `Build times are over ${TIMING_REPEATS} repeated builds of the last model call of the last turn. "Live" ` +
      `reuses the message objects of earlier calls; "rehydrated" builds from new objects with new strings of the ` +
      `same contents, as each invocation gets them from the checkpointer, in a warm container (state token counts ` +
      `are memoised by message id, the view's by text). ` +
      `Wall-clock p95 is sensitive to other load on the machine; CPU time is not. Loading the tokenizer's ranks ` +
      `costs ${fmt(Math.round(encoderLoadMs))} ms once per container, before the first count.`,
    "",
  ];
  lines.push(
    "## Prompt cache",
    "",
    "![model cost so far by turn: today's view, with cache_control, cache-stable](prompt-cache.svg)",
    "",
    "Every model call of both conversations is sent three ways through the real `ChatBedrockConverse`, each to its own local Converse endpoint " +
      "(input counted with Anthropic's published Claude tokenizer; simulated Bedrock prompt cache: prefix match at cache points within a " +
      "look-back of about 20 content blocks, at least 1,024 tokens per checkpoint, at most 4 points, 5-minute TTL on a controlled clock): " +
      "**today's view** (the window moves one pair a turn, budget in cl100k tokens, no cache points); **today's view + cache_control** " +
      "(the same view with `@langchain/aws`'s `cache_control` call option, points after the tools, the system prompt and the last message); " +
      "the **cache-stable view** (the product's view now: history in blocks, cache points placed by the view, budget in Claude's tokens from a " +
      "calibration fed with reported usage). " +
      `Model calls are ${CALL_GAP_MS / 1_000} s apart within a turn and turns ${TURN_GAP_MS.min / 1_000}–${TURN_GAP_MS.max / 1_000} s apart (log-uniform), ` +
      "so a few turns find the 5-minute cache expired. Dollars are Claude Sonnet 4's Bedrock on-demand prices (`DEFAULT_MODEL_PRICES`). " +
      '"Best any cache placement could do" prices the same requests as if every token an earlier request already held were read from cache ' +
      "and every other one paid once at the input price (no minimum per checkpoint, no limit on points, no expiry): " +
      "the floor no layout of that view goes below. " +
      '"Least any caching of the same content could cost" prices each distinct content block the variant sent, wherever it stood, once at the input price ' +
      "if one request sent it, else written once and read by every other request that sent it (Bedrock reads only what was written), whichever is cheaper, " +
      "the tool schemas and framing read after the first call: on today's view, the least any view showing the same turns and outputs can cost. " +
      "The second table splits each variant's dollars per turn (as shares of today's): output; input read from cache; written and read by a later call; " +
      "written in a turn's last call after its previous call's end (tool results the next turn condenses away, which no call reads); not cached; " +
      "and counts the first calls that found nothing to read because the history block moved or the 5-minute cache had expired.",
    "",
  );
  for (const run of runs) {
    const over = firstOverWindow(run);
    lines.push(
      `## ${run.turns} turns`,
      "",
      `${fmt(run.samples.length)} model calls, ${fmt(run.toolOutputs)} tool outputs of 1–100 KB ` +
        `(${fmt(run.offloadedOutputs)} over the threshold, offloaded). ` +
        (over
          ? `Full replay no longer fits a ${fmt(CONTEXT_WINDOW_TOKENS)}-token context window from turn ${over} (⚠).`
          : "Full replay stays within the context window."),
      "",
      ...table(run),
      "",
      `At turn ${run.turns} (state of ${fmt(run.lastStateMessages)} messages, ${fmt(run.lastStateChars)} ` +
        `characters), building the view: live ${measured(run.lastTurnLive)}; rehydrated ` +
        `${measured(run.lastTurnRehydrated)}. ` +
        `With nothing memoised (this conversation's first turn in a new container), tokenizing the state adds ${measured(run.lastTurnCold)} once. ` +
        `Over all ${fmt(run.samples.length)} model calls, the first build after new messages (which tokenizes them): ` +
        `median ${ms(perCall(run, "buildMs").median)} ms, p95 ${ms(perCall(run, "buildMs").p95)} ms; rehydrated: ` +
        `median ${ms(perCall(run, "rehydratedBuildMs").median)} ms, p95 ${ms(perCall(run, "rehydratedBuildMs").p95)} ` +
        `ms.`,
      "",
      `### ${run.turns} turns: prompt cache`,
      "",
      ...cacheTable(cacheSummaries(run)),
      "",
      cacheNote(cacheSummaries(run)),
      "",
      ...breakdownTable(run),
      "",
    );
  }
  return lines.join("\n");
}

/** What bounds the saving: the output tokens, which the cache does not change. */
function cacheNote(summaries: CacheSummary[]): string {
  const today = summaryOf(summaries, "today");
  const stable = summaryOf(summaries, "cacheStable");
  return (
    `Output tokens are ${pct(today.outputDollarsPerTurn / today.dollarsPerTurn)} of today's cost per turn and the same in every variant; ` +
    `the cache-stable view's input costs ` +
    `${pct((stable.dollarsPerTurn - stable.outputDollarsPerTurn) / (today.dollarsPerTurn - today.outputDollarsPerTurn))} of today's input. ` +
    `Of the cache-stable view's input, ${pct(stable.sharedShare)} was already in an earlier request (the most ` +
    `any placement could read; today's view: ${pct(today.sharedShare)}). ` +
    `Budget errors: ${summaries.map((s) => `${VARIANT_LABELS[s.key]} ${s.budgetErrors}`).join(", ")}.`
  );
}

/** One panel per conversation: tokens per model call on a log scale, against the budget and the context window. */
function chart(runs: Run[], budget: number): string {
  const panelWidth = 520;
  const panelHeight = 340;
  const margin = { left: 70, right: 20, top: 40, bottom: 50 };
  const maxTokens = Math.max(...runs.flatMap((r) => r.samples.map((s) => s.fullReplayTokens)));
  const exponents = Array.from({ length: Math.ceil(Math.log10(maxTokens)) - 1 }, (_, i) => i + 2);
  const label = (exp: number) => (exp >= 6 ? `${10 ** (exp - 6)}M` : exp >= 3 ? `${10 ** (exp - 3)}K` : `${10 ** exp}`);
  const colors = { window: "#999999", budget: "#2b8a3e", full: "#d6336c", view: "#1c7ed6" };
  const panels = runs.map((run, p): Panel => {
    const calls = run.samples.length;
    // x is the call's index: each point is one model call, ticked at the first call of a turn.
    const line = (value: (s: CallSample) => number, color: string, dash?: string): LineSeries => ({
      points: run.samples.map((s, i) => ({ x: i, y: value(s) })),
      color,
      dash,
      width: 1.8,
    });
    return {
      ...panelInRow(p, panelWidth, panelHeight, margin),
      title: `${run.turns} turns, ${calls} model calls`,
      x: {
        min: 0,
        max: Math.max(1, calls - 1),
        ticks: turnTicks(run.turns).map((turn) => ({ value: run.samples.findIndex((s) => s.turn === turn), label: String(turn) })),
        title: "turn (each point is one model call)",
      },
      y: {
        scale: "log",
        min: 10 ** exponents[0],
        max: 10 ** exponents[exponents.length - 1],
        ticks: exponents.map((exp) => ({ value: 10 ** exp, label: label(exp) })),
        title: "tokens sent (log scale)",
      },
      series: [
        line(() => CONTEXT_WINDOW_TOKENS, colors.window, "2 4"),
        line(() => budget, colors.budget, "6 4"),
        line((s) => s.fullReplayTokens, colors.full),
        line((s) => s.viewTokens, colors.view),
      ],
    };
  });
  return lineChart({
    width: panelWidth * runs.length,
    height: panelHeight + 40,
    panels,
    legend: {
      x: margin.left,
      y: panelHeight + 22,
      spacing: 210,
      entries: [
        { color: colors.full, label: "full replay" },
        { color: colors.view, label: "shaped view" },
        { color: colors.budget, dash: "6 4", label: `budget (${budget.toLocaleString("en-US")} tokens)` },
        { color: colors.window, dash: "2 4", label: `${CONTEXT_WINDOW_TOKENS.toLocaleString("en-US")}-token context window` },
      ],
    },
  });
}

/** One line per variant: cached share, dollars per turn, tokens per call, estimate error. */
function cacheTable(summaries: CacheSummary[]): string[] {
  const today = summaries.find((s) => s.key === "today") as CacheSummary;
  const rows = [
    "| view | model calls | input tokens per call (Claude) | read from cache | written to cache | dollars per " +
      "turn | vs today | best any cache placement could do, vs today | least any caching of the same content could " +
      "cost, vs today | largest input (Claude tokens) | estimate error, calls 1–3 / from call 4 |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const s of summaries) {
    rows.push(
      `| ${VARIANT_LABELS[s.key]} | ${fmt(s.calls)} | ${fmt(Math.round(s.inputTokensPerCall))} | ` +
        `${pct(s.cachedShare)} | ${pct(s.writtenShare)} | $${s.dollarsPerTurn.toFixed(4)} | ` +
        `${pct(s.dollarsPerTurn / today.dollarsPerTurn)} | ${pct(s.floorDollarsPerTurn / today.dollarsPerTurn)} | ` +
        `${pct(s.contentFloorDollarsPerTurn / today.dollarsPerTurn)} | ` +
        `${fmt(s.maxInputTokens)} | ${pct(s.maxErrorFirstThree)} / ${pct(s.maxErrorAfterThird)} |`,
    );
  }
  return rows;
}

/** Where each variant's dollars per turn go, as shares of today's cost per turn, and the calls that found nothing to read. */
function breakdownTable(run: Run): string[] {
  const today = summaryOf(cacheSummaries(run), "today").dollarsPerTurn;
  const rows = [
    "| view | output | read from cache | written, read later | written, never read | not cached | " +
      "first calls after the block moved | first calls after the cache expired (tokens written again) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const variant of run.cache) {
    const b = costBreakdown(variant, run.turns);
    const share = (dollars: number) => pct(dollars / today);
    rows.push(
      `| ${VARIANT_LABELS[variant.key]} | ${share(b.output)} | ${share(b.read)} | ${share(b.writtenThenRead)} | ` +
        `${share(b.writtenNeverRead)} | ${share(b.notCached)} | ${b.blockMoves} | ${b.expired} (${fmt(b.expiredTokens)}) |`,
    );
  }
  return rows;
}

const pct = (share: number) => `${(share * 100).toFixed(1)} %`;

/** A TTL option: `5m` or `1h`, else the default. */
function ttl(value: string | undefined): "5m" | "1h" {
  if (value === undefined) return DEFAULT_PROMPT_CACHE_TTL;
  if (value !== "5m" && value !== "1h") throw new Error(`a TTL is 5m or 1h, not ${value}`);
  return value;
}

async function main(): Promise<void> {
  const options = {
    seed: { type: "string", default: "7" },
    turns: { type: "string" },
    "block-turns": { type: "string" },
    "stable-ttl": { type: "string" },
    "turn-ttl": { type: "string" },
    "turn-digest": { type: "string", default: "on" },
    write: { type: "boolean", default: false },
  } as const;
  const { values } = parseCliArgs(optionsUsage("bench:context", options), { options });
  const seed = Number(values.seed);
  const conversations = values.turns ? [Number(values.turns)] : CONVERSATION_TURNS;
  let started = performance.now();
  countTextTokens("load the ranks");
  const encoderLoadMs = performance.now() - started;
  // Today's defaults, which the comparison's variants start from.
  const comparisonPolicy: ModelViewPolicy = {
    systemPrompt: DEFAULT_SYSTEM_PROMPT,
    finishedTurns: DEFAULT_VIEW_FINISHED_TURNS,
    toolOutputTokens: DEFAULT_VIEW_TOOL_OUTPUT_TOKENS,
    totalBudget: DEFAULT_VIEW_TOTAL_BUDGET,
    toolSchemaTokens: countTextTokens(JSON.stringify(TOOLS)),
  };
  // The product's default view (in cl100k tokens, as the shaped-view figures have always been).
  const policy: ModelViewPolicy = {
    ...comparisonPolicy,
    historyBlockTurns: values["block-turns"] ? Number(values["block-turns"]) : DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
    cache: {
      minTokensPerCheckpoint: DEFAULT_PROMPT_CACHE_MIN_TOKENS,
      stableTtl: ttl(values["stable-ttl"]),
      turnTtl: ttl(values["turn-ttl"]),
    },
    // The product's turn digest (docs/sufficiency.md); `--turn-digest off` measures the view without it.
    turnDigest: values["turn-digest"] === "off" ? undefined : DEFAULT_TURN_DIGEST,
    // The product's ledger of time anchors; these conversations' tool arguments hold none, so it stays empty here.
    parameterLedger: DEFAULT_PARAMETER_LEDGER,
  };
  const runs: Run[] = [];
  for (const turns of conversations) {
    started = performance.now();
    const run = await runConversation(turns, seed * 1_000 + turns, policy, comparisonPolicy);
    runs.push(run);
    console.log(`\n${turns} turns: ${run.samples.length} model calls (${((performance.now() - started) / 1_000).toFixed(1)} s)\n`);
    console.log(table(run).join("\n"));
    console.log(
      `\nbuild at turn ${turns}: live ${measured(run.lastTurnLive)}; rehydrated ${measured(run.lastTurnRehydrated)}; cold +${measured(run.lastTurnCold)}`,
    );
    console.log(`\n${cacheTable(cacheSummaries(run)).join("\n")}\n\n${cacheNote(cacheSummaries(run))}\n\n${breakdownTable(run).join("\n")}`);
  }
  const v = verdicts(runs, policy.totalBudget);
  console.log(
    `\nnever over budget: ${v.neverOverBudget}; full/view at turn ${TARGET_RATIO_TURN}: ` +
      `${v.ratioAtTurn50.toFixed(1)}× (target ≥ ${TARGET_RATIO}×); build at the last turn: ` +
      `${ms(v.buildAtLastTurn)} ms median (target < ${TARGET_BUILD_MS} ms)`,
  );
  console.log(
    `prompt cache over ${runs[0].turns} turns: ${pct(v.cachedShare)} read from cache (target ≥ ${pct(TARGET_CACHED_SHARE)}), ` +
      `cost per turn ${pct(v.costRatio)} of today's (target ≤ ${pct(TARGET_COST_RATIO)}); never over the budget in ` +
      `Claude's tokens: ${v.neverOverModelBudget}; ` +
      `estimate error after the third call ≤ ${pct(v.estimateErrorAfterThird)} (target ≤ ${pct(TARGET_ESTIMATE_ERROR)})`,
  );
  if (values.write) {
    await writeResults({
      "context.md": markdown(runs, policy, seed, encoderLoadMs),
      "context.svg": chart(runs, policy.totalBudget),
      "prompt-cache.svg": costChart(runs.map((r) => ({ turns: r.turns, variants: r.cache }))),
    });
  }
  // The view's rules fail the run; the cost and share targets are reported, not enforced.
  const broken = !v.neverOverBudget || !v.neverOverModelBudget || v.estimateErrorAfterThird > TARGET_ESTIMATE_ERROR;
  if (broken || v.ratioAtTurn50 < TARGET_RATIO || v.buildAtLastTurn >= TARGET_BUILD_MS) process.exitCode = 1;
}

await main();
