import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import fc from "fast-check";
import type { ModelViewPolicy, PromptCachePolicy } from "../../lib/model-view/index.js";
import { rows } from "./histories.js";

/**
 * Many-shaped thread histories for property tests: failed and interrupted turns, consecutive user
 * messages, parallel tool calls, missing/duplicate/orphan results, calls without ids or with empty
 * ones, blank texts, content as blocks (some all blank) in questions, answers and tool results,
 * outputs far over the threshold, offloaded ones, and offloaded ones smaller than the threshold.
 */

type ResultKind = "small" | "large" | "huge" | "offloaded" | "offloaded-small" | "blocks" | "blank-blocks" | "empty" | "missing" | "duplicate";

interface CallSpec {
  id: "fresh" | "missing" | "empty" | "reused";
  name: string;
  result: ResultKind;
  size: number;
}

interface StepSpec {
  text: "none" | "text" | "blank" | "blocks" | "blank-blocks";
  calls: CallSpec[];
  orphanFirst: boolean;
  reverseResults: boolean;
}

interface TurnSpec {
  question: "text" | "blank" | "long" | "blocks" | "blank-blocks";
  steps: StepSpec[];
  ending: "answer" | "blocks-answer" | "blank-answer" | "blank-blocks-answer" | "none";
}

export interface HistorySpec {
  leading: "none" | "assistant" | "tool" | "system";
  finished: TurnSpec[];
  active: TurnSpec;
}

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  id: fc.constantFrom("fresh", "fresh", "fresh", "fresh", "fresh", "fresh", "missing", "empty", "reused"),
  name: fc.constantFrom("sql_query", "search_documents", "power_bi", "create_task"),
  result: fc.constantFrom<ResultKind>(
    "small",
    "small",
    "small",
    "large",
    "huge",
    "offloaded",
    "offloaded",
    "offloaded-small",
    "blocks",
    "blank-blocks",
    "empty",
    "missing",
    "duplicate",
  ),
  size: fc.integer({ min: 0, max: 3 }),
});

const stepSpec: fc.Arbitrary<StepSpec> = fc.record({
  text: fc.constantFrom("none", "none", "text", "blank", "blocks", "blank-blocks"),
  calls: fc.array(callSpec, { minLength: 0, maxLength: 4 }),
  orphanFirst: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  reverseResults: fc.boolean(),
});

function turnSpec(endings: TurnSpec["ending"][]): fc.Arbitrary<TurnSpec> {
  return fc.record({
    question: fc.constantFrom("text", "text", "text", "long", "blank", "blocks", "blank-blocks"),
    steps: fc.array(stepSpec, { minLength: 0, maxLength: 3 }),
    ending: fc.constantFrom(...endings),
  });
}

export const historySpec: fc.Arbitrary<HistorySpec> = fc.record({
  leading: fc.constantFrom("none", "none", "none", "assistant", "tool", "system"),
  finished: fc.array(turnSpec(["answer", "answer", "answer", "blocks-answer", "blank-answer", "blank-blocks-answer", "none"]), { minLength: 0, maxLength: 12 }),
  // The thread is about to call the model: the active turn has no final answer yet.
  active: turnSpec(["none", "none", "blank-answer", "blank-blocks-answer"]),
});

/** Cache policies with minimums from "every boundary" to Claude Sonnet's 1,024, and both TTL orders Bedrock accepts. */
const cacheSpec: fc.Arbitrary<PromptCachePolicy> = fc
  .record({
    minTokensPerCheckpoint: fc.constantFrom(1, 40, 300, 1_024),
    ttls: fc.constantFrom(["5m", "5m"] as const, ["1h", "5m"] as const, ["1h", "1h"] as const),
  })
  .map(({ minTokensPerCheckpoint, ttls }) => ({ minTokensPerCheckpoint, stableTtl: ttls[0], turnTtl: ttls[1] }));

export const policySpec: fc.Arbitrary<ModelViewPolicy> = fc.record(
  {
    systemPrompt: fc.constantFrom("You answer questions about sales data.", "", "Be brief. Cite the tool you used."),
    finishedTurns: fc.integer({ min: 0, max: 8 }),
    historyBlockTurns: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 6 })),
    toolOutputTokens: fc.constantFrom(100, 500, 2_000),
    totalBudget: fc.oneof(fc.integer({ min: 50, max: 3_000 }), fc.integer({ min: 3_000, max: 30_000 })),
    toolSchemaTokens: fc.oneof(fc.constant(undefined), fc.integer({ min: 0, max: 800 })),
    cache: fc.oneof(fc.constant(undefined), cacheSpec, cacheSpec),
    tokenEstimate: fc.oneof(
      fc.constant(undefined),
      fc.record({
        ratio: fc.double({ min: 0.7, max: 1.6, noNaN: true }),
        offset: fc.integer({ min: -50, max: 400 }),
        margin: fc.double({ min: 0, max: 0.5, noNaN: true }),
      }),
    ),
    turnDigest: fc.oneof(
      fc.constant(undefined),
      fc.record({ recentTurns: fc.integer({ min: 0, max: 3 }), outputTokens: fc.constantFrom(0, 5, 400), argsChars: fc.constantFrom(1, 40, 400) }),
    ),
  },
  { requiredKeys: ["systemPrompt", "finishedTurns", "toolOutputTokens", "totalBudget"] },
);

const SMALL = [5, 20, 60, 95];
const LARGE = [150, 600, 1_800, 2_500];
// Up to 32,000 characters: longer texts are not memoised, and thousands of runs would re-tokenize them.
const HUGE = [3_000, 4_500, 6_000, 7_900];
const OFFLOADED = [2_100, 9_000, 30_000, 250_000];
/** Offloaded outputs the threshold alone would show: the handle still has to reach the model. */
const OFFLOADED_SMALL = [3, 40, 90, 99];

/** Text blocks with blank ones among them, which Converse rejects. */
function blocks(...texts: string[]): { type: "text"; text: string }[] {
  return texts.map((text) => ({ type: "text" as const, text }));
}

/** Builds the stored messages a spec describes; ids are deterministic per history. */
export function historyOf(spec: HistorySpec): BaseMessage[] {
  const messages: BaseMessage[] = [];
  let nextId = 0;
  let lastId: string | undefined;
  if (spec.leading === "assistant") messages.push(new AIMessage("Hello! How can I help?"));
  if (spec.leading === "tool") messages.push(new ToolMessage({ content: "stray", tool_call_id: "stray" }));
  if (spec.leading === "system") messages.push(new SystemMessage("an old system prompt"));

  // An assistant message with text and no tool calls is a final answer, and the active turn has none
  // yet: such a step stays only when a later one makes calls (the view merges the two).
  const steps = spec.active.steps.map((step, s) => {
    const callsLater = spec.active.steps.slice(s + 1).some((later) => later.calls.length > 0);
    return step.calls.length === 0 && !callsLater && (step.text === "text" || step.text === "blocks") ? { ...step, text: "blank" as const } : step;
  });
  const active = { ...spec.active, steps };
  const turns = [...spec.finished, active];
  turns.forEach((turn, t) => {
    const text = `q${t}: which customers drove the margin change?`;
    const question =
      turn.question === "blank"
        ? "  "
        : turn.question === "long"
          ? `q${t} ${rows(400)}`
          : turn.question === "blocks"
            ? blocks(" ", text, "")
            : turn.question === "blank-blocks"
              ? blocks(" ", "\n")
              : text;
    messages.push(new HumanMessage({ content: question }));
    for (const step of turn.steps) {
      if (step.orphanFirst) messages.push(new ToolMessage({ content: "orphan", tool_call_id: `orphan-${nextId++}` }));
      const toolCalls = step.calls.map((call) => {
        const id = call.id === "missing" ? undefined : call.id === "empty" ? "" : call.id === "reused" && lastId ? lastId : `call-${nextId++}`;
        if (id) lastId = id;
        return { id, name: call.name, args: { query: `${call.name} ${t}` }, type: "tool_call" as const };
      });
      const text =
        step.text === "text"
          ? "Let me check."
          : step.text === "blank"
            ? " \n"
            : step.text === "blocks"
              ? blocks("Checking.", " ")
              : step.text === "blank-blocks"
                ? blocks(" ", "")
                : "";
      messages.push(new AIMessage({ content: text, tool_calls: toolCalls }));
      const results: ToolMessage[] = [];
      step.calls.forEach((call, c) => {
        const id = toolCalls[c].id ?? `unknown-${nextId++}`;
        const name = call.name;
        switch (call.result) {
          case "missing":
            return;
          case "empty":
            results.push(new ToolMessage({ content: "", tool_call_id: id, name }));
            return;
          case "blocks":
            results.push(new ToolMessage({ content: blocks(rows(SMALL[call.size]), " "), tool_call_id: id, name }));
            return;
          case "blank-blocks":
            results.push(new ToolMessage({ content: blocks("", " \n"), tool_call_id: id, name }));
            return;
          case "offloaded":
          case "offloaded-small": {
            const preview = `region,revenue\nnorth,${call.size}`;
            const tokens = (call.result === "offloaded" ? OFFLOADED : OFFLOADED_SMALL)[call.size];
            results.push(new ToolMessage({ content: preview, tool_call_id: id, name, artifact: { handle: `art_${id}`, bytes: tokens * 4, tokens, preview } }));
            return;
          }
          default: {
            const size = call.result === "huge" ? HUGE[call.size] : call.result === "large" ? LARGE[call.size] : SMALL[call.size];
            results.push(new ToolMessage({ content: rows(size), tool_call_id: id, name }));
            if (call.result === "duplicate") results.push(new ToolMessage({ content: "again", tool_call_id: id, name }));
          }
        }
      });
      if (step.reverseResults) results.reverse();
      messages.push(...results);
    }
    if (turn.ending === "answer") messages.push(new AIMessage(`a${t}: the north region drove it.`));
    if (turn.ending === "blocks-answer") messages.push(new AIMessage({ content: [{ type: "text", text: `a${t}: south.` }] }));
    if (turn.ending === "blank-answer") messages.push(new AIMessage("   "));
    if (turn.ending === "blank-blocks-answer") messages.push(new AIMessage({ content: blocks(" ", "") }));
  });
  return messages;
}
