import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ContextBudgetExceededError, InvalidModelViewError } from "../../lib/errors.js";
import {
  buildModelView,
  countMessagesTokens,
  EMPTY_USER_MESSAGE,
  DEFAULT_HISTORY_BLOCK_TURNS,
  EXACT_TOKEN_ESTIMATE,
  INTERRUPTED_TOOL_RESULT,
  MAX_CACHE_POINTS,
  countMessageTokens,
  offloadedArtifact,
  toolOutputNotice,
  MESSAGE_OVERHEAD_TOKENS,
  NO_ANSWER_STUB,
  TURN_DIGEST_HEADING,
  validateConverseView,
  withCachePoints,
  type ModelView,
  type ModelViewPolicy,
} from "../../lib/model-view/index.js";
import { historyOf, historySpec, policySpec } from "./history-arbitrary.js";
import { fingerprint, toolCallIds, viewOrBudgetError } from "./histories.js";
import { DEFAULT_LOOKBACK_BLOCKS } from "../support/prompt-cache.js";
import { propertyRuns } from "../support/property-runs.js";

const RUNS = propertyRuns(1_500);

/** The view, or undefined when there is none to build: over the budget, or nothing to answer. */
function viewOrInvalid(messages: BaseMessage[], policy: ModelViewPolicy): ModelView | undefined {
  try {
    return viewOrBudgetError(messages, policy);
  } catch (error) {
    if (error instanceof InvalidModelViewError) return undefined;
    throw error;
  }
}

const case_ = fc.record({ spec: historySpec, policy: policySpec }).map(({ spec, policy }) => ({ messages: historyOf(spec), policy }));

/** The text a message shows: its string, or its non-blank text blocks joined by newlines. */
function textOf(message: BaseMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  return content
    .map((block) => (block.type === "text" && typeof block.text === "string" ? block.text : ""))
    .filter((text) => text.trim() !== "")
    .join("\n");
}

/** The non-blank text pieces of a message: its string, or each non-blank text block. */
function piecesOf(message: BaseMessage): string[] {
  const { content } = message;
  if (typeof content === "string") return content.trim() === "" ? [] : [content];
  return content.flatMap((block) => (block.type === "text" && typeof block.text === "string" && block.text.trim() !== "" ? [block.text] : []));
}

/** `ceil(((local × ratio) + offset) × (1 + margin))`: the budget's unit, computed here rather than read from the view. */
function modelTokens(localTokens: number, policy: ModelViewPolicy): number {
  const { ratio, offset, margin } = policy.tokenEstimate ?? EXACT_TOKEN_ESTIMATE;
  return Math.ceil((localTokens * ratio + offset) * (1 + margin));
}

/**
 * The smallest view the contract allows, in local tokens, from the view built without a budget: no
 * finished turns, and every active-turn result shown as its over-budget notice where that is smaller.
 */
function smallestViewTokens(messages: BaseMessage[], policy: ModelViewPolicy): number {
  const roomy = buildModelView(messages, { ...policy, totalBudget: Number.MAX_SAFE_INTEGER });
  const v = roomy.messages;
  const start = activeStart(v);
  const calls = new Map(v.slice(start).flatMap((m) => ((m as AIMessage).tool_calls ?? []).map((c) => [c.id, c.name] as const)));
  // Each call's stored result: the first one after the call, in the active turn (ids may be reused or answered twice).
  const stored = new Map<string, ToolMessage>();
  const called = new Set<string>();
  for (const m of messages.slice(messages.findLastIndex((x) => x.type === "human"))) {
    for (const id of toolCallIds(m)) called.add(id);
    const id = (m as ToolMessage).tool_call_id;
    if (m.type === "tool" && called.has(id) && !stored.has(id)) stored.set(id, m as ToolMessage);
  }
  const noticed = new Set(roomy.stats.omittedOutputs.map((o) => o.toolCallId));
  let tokens = roomy.stats.toolSchemaTokens + countMessagesTokens(v.filter((m) => m.type === "system")) + countMessagesTokens(v.slice(start));
  for (const m of v.slice(start)) {
    const shown = m as ToolMessage;
    if (m.type !== "tool" || noticed.has(shown.tool_call_id)) continue;
    const name = calls.get(shown.tool_call_id) as string;
    const original = stored.get(shown.tool_call_id);
    const output = original && offloadedArtifact(original);
    const text = piecesOf(shown).join("\n");
    const notice = toolOutputNotice({
      toolName: name,
      tokens: output?.tokens ?? countMessageTokens(shown) - MESSAGE_OVERHEAD_TOKENS,
      preview: text,
      reason: "over-budget",
      threshold: policy.toolOutputTokens,
    });
    const noticeTokens = countMessageTokens(
      new ToolMessage({ content: notice, tool_call_id: shown.tool_call_id, name: shown.name ?? name, status: shown.status }),
    );
    tokens += Math.min(0, noticeTokens - countMessageTokens(shown));
  }
  return tokens;
}

/** Index in the view of the active turn's user message: the last user message. */
function activeStart(view: BaseMessage[]): number {
  return view.findLastIndex((m) => m.type === "human");
}

/** What Bedrock would see of a message: its type, text, tool calls and result id. */
function sameMessage(a: BaseMessage, b: BaseMessage): boolean {
  return (
    a.type === b.type &&
    textOf(a) === textOf(b) &&
    JSON.stringify(toolCallIds(a)) === JSON.stringify(toolCallIds(b)) &&
    (a as ToolMessage).tool_call_id === (b as ToolMessage).tool_call_id
  );
}

/** The view of a state one step later, when both views kept the same history and needed no reduction beyond the per-output threshold. */
function comparable(before: ModelView, after: ModelView | undefined, addedTurns: number): after is ModelView {
  const reduced = (v: ModelView) => v.stats.finishedTurnsDroppedForBudget > 0 || v.stats.omittedOutputs.some((o) => o.reason === "over-budget");
  return after !== undefined && !reduced(before) && !reduced(after) && after.stats.finishedTurnsKept === before.stats.finishedTurnsKept + addedTurns;
}

/** Converse content blocks of messages as `ChatBedrockConverse` sends them: a text or each block, and one per tool call. */
function contentBlocks(messages: readonly BaseMessage[]): number {
  return messages.reduce((n, m) => n + (typeof m.content === "string" ? (m.content.length > 0 ? 1 : 0) : m.content.length) + toolCallIds(m).length, 0);
}

/**
 * The next call's view reads what this one wrote: a point on the same message closing the same prefix,
 * or a later point whose look-back (`DEFAULT_LOOKBACK_BLOCKS` content blocks, as Bedrock's) reaches it.
 * Not when the finished-turn block became whole in between: the next call then writes the block's point.
 * Not when this view ends with an interrupted call's synthetic result: the graph runs the tools again
 * rather than the model, so the layout does not take that end for an earlier call's.
 */
function expectEndReadBack(before: ModelView, after: ModelView): void {
  const end = before.stats.cachePoints.find((p) => p.kind === "end");
  const block = (v: ModelView) => v.stats.cachePoints.find((p) => p.kind === "history")?.prefixTokens;
  const synthetic = (m: BaseMessage | undefined) => m?.type === "tool" && m.content === INTERRUPTED_TOOL_RESULT;
  if (!end || block(before) !== block(after) || synthetic(before.messages[end.after])) return;
  for (let i = 0; i <= end.after; i++) expect(sameMessage(before.messages[i], after.messages[i])).toBe(true);
  const read = after.stats.cachePoints.find((p) => p.after >= end.after);
  expect(read).toBeDefined();
  if (read?.after === end.after) expect(read.prefixTokens).toBe(end.prefixTokens);
  else expect(contentBlocks(after.messages.slice(end.after + 1, (read?.after ?? 0) + 1))).toBeLessThanOrEqual(DEFAULT_LOOKBACK_BLOCKS);
}

describe("model view", () => {
  describe("buildModelView (properties)", () => {
    it("returns a view that passes the Converse validator with its cache points, or throws only ContextBudgetExceededError", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          validateConverseView(view.messages);
          validateConverseView(withCachePoints(view.messages, view.stats.cachePoints));
        }),
        { numRuns: RUNS },
      );
    });

    it("returns a view within the budget in the model's tokens, tool schemas and safety margin included, with exact token stats", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const { ratio, offset, margin } = policy.tokenEstimate ?? EXACT_TOKEN_ESTIMATE;
          const local = view.stats.viewTokens + view.stats.toolSchemaTokens;
          expect(view.stats.viewTokens).toBe(countMessagesTokens(view.messages));
          expect(Math.ceil((local * ratio + offset) * (1 + margin))).toBeLessThanOrEqual(policy.totalBudget);
          expect(view.stats.estimatedInputTokens).toBe(Math.ceil(local * ratio + offset));
          expect(view.stats.stateTokens).toBe(countMessagesTokens(messages));
        }),
        { numRuns: RUNS },
      );
    });

    it("returns at most four cache points, in order, each far enough from the one before to be cached, the end one on the last message", () => {
      const ORDER = ["system", "history", "previous", "end"];
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const points = view.stats.cachePoints;
          if (!policy.cache) {
            expect(points).toEqual([]);
            return;
          }
          expect(points.length).toBeLessThanOrEqual(MAX_CACHE_POINTS);
          const { ratio } = policy.tokenEstimate ?? EXACT_TOKEN_ESTIMATE;
          let previousTokens = 0;
          points.forEach((point, i) => {
            if (i > 0) expect(ORDER.indexOf(point.kind)).toBeGreaterThan(ORDER.indexOf(points[i - 1].kind));
            if (i > 0) expect(point.after).toBeGreaterThan(points[i - 1].after);
            expect((point.prefixTokens - previousTokens) * ratio).toBeGreaterThanOrEqual(policy.cache!.minTokensPerCheckpoint);
            previousTokens = point.prefixTokens;
            expect(point.prefixTokens).toBe(view.stats.toolSchemaTokens + countMessagesTokens(view.messages.slice(0, point.after + 1)));
            // Bedrock rejects a longer TTL after a shorter one.
            if (i > 0 && points[i - 1].ttl === "5m") expect(point.ttl).toBe("5m");
            const message = view.messages[point.after];
            expect(message.type === "ai" && toolCallIds(message).length > 0).toBe(false);
          });
          for (const point of points) if (point.kind === "end") expect(point.after).toBe(view.messages.length - 1);
          if (points[0]?.kind === "system") expect(view.messages[0].type).toBe("system");
        }),
        { numRuns: RUNS },
      );
    });

    it("returns its previous point where an earlier call of the thread placed its end point, on the same prefix", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          const previous = view?.stats.cachePoints.find((p) => p.kind === "previous");
          if (!view || !previous || !comparable(view, view, 0)) return;
          // Earlier calls ended at a question or after a group of tool results.
          const ends = messages.flatMap((m, j) => (m.type === "human" || (m.type === "tool" && messages[j + 1]?.type !== "tool") ? [j] : []));
          const written = ends.flatMap((j) => {
            // A cut that no call could have seen (before the first question, or after a final answer) has no view.
            const earlier = viewOrInvalid(messages.slice(0, j + 1), policy);
            const end = earlier?.stats.cachePoints.find((p) => p.kind === "end");
            return earlier && end ? [{ view: earlier, end }] : [];
          });
          const match = written.find(
            ({ view: earlier, end }) =>
              end.after === previous.after &&
              end.prefixTokens === previous.prefixTokens &&
              earlier.messages.slice(0, end.after + 1).every((m, i) => sameMessage(m, view.messages[i])),
          );
          expect(match).toBeDefined();
        }),
        { numRuns: RUNS },
      );
    });

    it("returns a view whose end point the next call of the turn reads back on the same prefix", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const before = viewOrBudgetError(messages, policy);
          if (!before) return;
          const step = [
            new AIMessage({ content: "", tool_calls: [{ id: "next-step", name: "sql_query", args: { query: "more" }, type: "tool_call" }] }),
            new ToolMessage({ content: "north,1", tool_call_id: "next-step", name: "sql_query" }),
          ];
          const after = viewOrBudgetError([...messages, ...step], policy);
          if (comparable(before, after, 0)) expectEndReadBack(before, after);
        }),
        { numRuns: RUNS },
      );
    });

    it("returns a first call's view whose end point the next turn reads back on the same prefix until the history block moves", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const before = viewOrBudgetError(messages, policy);
          // A turn's later calls end after tool results, which the next turn condenses away.
          if (before?.messages[before.messages.length - 1].type !== "human") return;
          const after = viewOrBudgetError([...messages, new AIMessage("the final answer"), new HumanMessage("and next?")], policy);
          // With a turn digest, the turns whose outputs it shows are fixed once the block is whole: the
          // history's text changes when it becomes whole, as the block's point does.
          const becameWhole =
            policy.turnDigest !== undefined &&
            before.stats.finishedTurnsKept < policy.finishedTurns &&
            after !== undefined &&
            after.stats.finishedTurnsKept >= policy.finishedTurns;
          if (comparable(before, after, 1) && !becameWhole) expectEndReadBack(before, after);
        }),
        { numRuns: RUNS },
      );
    });

    it("throws ContextBudgetExceededError exactly when the smallest view the contract allows is over the budget, at it and ±1", () => {
      const atTheEdge = fc.record({ spec: historySpec, policy: policySpec, edge: fc.integer({ min: -1, max: 1 }) });
      fc.assert(
        fc.property(atTheEdge, ({ spec, policy, edge }) => {
          const messages = historyOf(spec);
          const smallest = modelTokens(smallestViewTokens(messages, policy), policy);
          const totalBudget = Math.max(1, smallest + edge);
          let threw = false;
          try {
            buildModelView(messages, { ...policy, totalBudget });
          } catch (error) {
            if (!(error instanceof ContextBudgetExceededError)) throw error;
            threw = true;
          }
          expect(threw).toBe(smallest > totalBudget);
        }),
        { numRuns: propertyRuns(500) },
      );
    });

    it("returns the same view at a budget of exactly its size, and a smaller one or none a token under it", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const size = modelTokens(view.stats.viewTokens + view.stats.toolSchemaTokens, policy);
          const exact = buildModelView(messages, { ...policy, totalBudget: size });
          expect(fingerprint(exact.messages)).toBe(fingerprint(view.messages));
          const under = viewOrBudgetError(messages, { ...policy, totalBudget: size - 1 });
          if (under) expect(modelTokens(under.stats.viewTokens + under.stats.toolSchemaTokens, policy)).toBeLessThan(size);
        }),
        { numRuns: propertyRuns(500) },
      );
    });

    it("returns every offloaded output of the active turn as a notice with its handle, whatever its size", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const v = view.messages;
          const results = messages.filter((m): m is ToolMessage => m.type === "tool");
          // A reused id makes "its result" ambiguous; those are covered by the pairing property.
          const once = (id: string) => results.filter((r) => r.tool_call_id === id).length === 1;
          const handles = new Map(
            results.flatMap((r) => (offloadedArtifact(r) && once(r.tool_call_id) ? [[r.tool_call_id, offloadedArtifact(r)!.handle] as const] : [])),
          );
          for (const m of v.slice(activeStart(v))) {
            const handle = m.type === "tool" ? handles.get((m as ToolMessage).tool_call_id) : undefined;
            if (handle && m.content !== INTERRUPTED_TOOL_RESULT) expect(textOf(m)).toContain(`Handle: ${handle}`);
          }
        }),
        { numRuns: RUNS },
      );
    });

    it("returns the active turn's assistant text only as stored non-blank pieces, never blank or made up", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const storedStart = messages.findLastIndex((m) => m.type === "human");
          const stored = new Set(
            messages
              .slice(storedStart)
              .filter((m) => m.type === "ai")
              .flatMap(piecesOf),
          );
          const v = view.messages;
          for (const m of v.slice(activeStart(v))) {
            if (m.type !== "ai") continue;
            // Two string messages merge with a blank line between them.
            const texts = typeof m.content === "string" ? [m.content] : m.content.map((b) => (b.type === "text" ? (b.text as string) : ""));
            const pieces = texts.flatMap((text) => text.split("\n\n"));
            for (const piece of pieces)
              if (piece !== "" || toolCallIds(m).length === 0)
                expect(stored.has(piece), JSON.stringify({ piece, stored: [...stored], m: m.content })).toBe(true);
          }
        }),
        { numRuns: RUNS },
      );
    });

    it("does not change its input", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const before = fingerprint(messages);
          const copy = [...messages];
          viewOrBudgetError(messages, policy);
          expect(fingerprint(messages)).toBe(before);
          expect(messages.every((m, i) => m === copy[i]) && messages.length === copy.length).toBe(true);
        }),
        { numRuns: RUNS },
      );
    });

    it("returns every tool call immediately followed by its results, each from the stored call or a marked stand-in", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const storedResults = new Set(messages.filter((m) => m.type === "tool").map((m) => (m as ToolMessage).tool_call_id));
          const v = view.messages;
          for (let i = 0; i < v.length; i++) {
            // A result follows its call or another result of the same call group.
            if (v[i].type === "tool") expect(v[i - 1].type === "tool" || toolCallIds(v[i - 1]).length > 0).toBe(true);
            const ids = toolCallIds(v[i]);
            if (ids.length === 0) continue;
            const answered = v.slice(i + 1, i + 1 + ids.length) as ToolMessage[];
            expect(answered.map((m) => m.type)).toEqual(ids.map(() => "tool"));
            expect(new Set(answered.map((m) => m.tool_call_id))).toEqual(new Set(ids));
            for (const r of answered) expect(storedResults.has(r.tool_call_id) || r.content === INTERRUPTED_TOOL_RESULT).toBe(true);
            expect(v[i + 1 + ids.length]?.type ?? "end").not.toBe("tool");
          }
        }),
        { numRuns: RUNS },
      );
    });

    it("returns finished turns only as (question, final answer) pairs of the latest finished turns", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const v = view.messages.filter((m) => m.type !== "system");
          const pairs = v.slice(0, activeStart(v));
          expect(pairs.length).toBe(2 * view.stats.finishedTurnsKept);
          const blockTurns = policy.historyBlockTurns ?? DEFAULT_HISTORY_BLOCK_TURNS;
          const { finishedTurnsInState, finishedTurnsKept, finishedTurnsDroppedForBudget } = view.stats;
          expect(finishedTurnsKept).toBeLessThanOrEqual(policy.finishedTurns + blockTurns - 1);
          // The window's first turn moves a block at a time; only the budget drops turns within it.
          const windowStart = finishedTurnsInState - finishedTurnsKept - finishedTurnsDroppedForBudget;
          expect(windowStart % blockTurns).toBe(0);
          expect(finishedTurnsKept + finishedTurnsDroppedForBudget).toBeGreaterThanOrEqual(Math.min(policy.finishedTurns, finishedTurnsInState));
          const humans = messages.map((m, i) => (m.type === "human" ? i : -1)).filter((i) => i >= 0);
          const finishedStarts = humans.slice(0, -1).slice(-view.stats.finishedTurnsKept || humans.length);
          const expectedQuestions = view.stats.finishedTurnsKept === 0 ? [] : finishedStarts.map((i) => textOf(messages[i]));
          for (let p = 0; p < pairs.length; p += 2) {
            const [question, answer] = [pairs[p], pairs[p + 1]];
            expect(question.type).toBe("human");
            expect(answer.type).toBe("ai");
            expect(toolCallIds(answer)).toEqual([]);
            const stored = expectedQuestions[p / 2];
            expect(textOf(question)).toBe(stored.trim() ? stored : EMPTY_USER_MESSAGE);
            // The turn's own final answer: its last assistant message, when that calls no tool and has text.
            const turnStart = finishedStarts[p / 2];
            const turnEnd = humans[humans.indexOf(turnStart) + 1];
            const last = messages.slice(turnStart + 1, turnEnd).findLast((m) => m.type === "ai");
            const own = last && toolCallIds(last).length === 0 && piecesOf(last).length > 0 ? textOf(last) : NO_ANSWER_STUB;
            // With a turn digest, the answer is followed by the digest of the turn's tool calls, and by nothing else.
            if (policy.turnDigest && textOf(answer) !== own) {
              expect(textOf(answer).startsWith(`${own}\n\n${TURN_DIGEST_HEADING}\n`)).toBe(true);
            } else expect(textOf(answer)).toBe(own);
          }
        }),
        { numRuns: RUNS },
      );
    });

    it("returns the latest user message, as the start of the active turn", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const latest = messages.findLast((m) => m.type === "human") as BaseMessage;
          const shown = view.messages[activeStart(view.messages)];
          expect(textOf(shown)).toBe(textOf(latest).trim() === "" ? EMPTY_USER_MESSAGE : textOf(latest));
          // Unchanged messages are reused; a changed one is a new object without blank pieces.
          if (shown !== latest)
            expect(typeof shown.content === "string" || shown.content.every((b) => b.type !== "text" || (b.text as string).trim() !== "")).toBe(true);
        }),
        { numRuns: RUNS },
      );
    });
  });
});
