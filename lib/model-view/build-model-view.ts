import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage, type ToolCall } from "@langchain/core/messages";
import { ContextBudgetExceededError, InvalidModelViewError } from "../errors.js";
import { placeCachePoints, withCachePoints, type CacheLayout } from "./cache-points.js";
import { messageText } from "./message-text.js";
import { countMessageTokens, countMessagesTokens, countStateTokens, MESSAGE_OVERHEAD_TOKENS } from "./token-counter.js";
import { EMPTY_OUT_OF_SIGHT_SUMMARY, outOfSightNotice, summaryAfterTurn } from "./out-of-sight-notice.js";
import { storedArtifact } from "./tool-output-artifact.js";
import { toolOutputNotice } from "./tool-output-notice.js";
import { turnDigest } from "./turn-digest.js";
import { boundedLedger, ledgerAfterTurn, ledgerText } from "./parameter-ledger.js";
import { boundedStanding, standingAfterTurn, standingText } from "./standing-ledger.js";
import type {
  LedgerEntry,
  LeftOutReason,
  MessageDisposition,
  MessageRepair,
  ModelView,
  ModelViewPolicy,
  OmittedOutput,
  OutOfSightSummary,
  StandingEntry,
  TokenEstimate,
  TurnDigestPolicy,
  ViewRepairs,
} from "./types.js";
import { CONVERSE_RULES } from "./converse-rules.js";
import { validateConverseView } from "./validate-view.js";

/** Tool schema tokens assumed when the policy does not say (a model called without tools). */
export const DEFAULT_TOOL_SCHEMA_TOKENS = 0;

/** Finished-turn block assumed when the policy does not say: the window moves one pair a turn. */
export const DEFAULT_HISTORY_BLOCK_TURNS = 1;

/** Token estimate assumed when the policy gives none: the model counts as the local tokenizer does. */
export const EXACT_TOKEN_ESTIMATE: TokenEstimate = { ratio: 1, offset: 0, margin: 0 };

/**
 * Stands in the view for the answer of a finished turn that has none (it failed or was interrupted).
 * Keeping the question lets "try again" make sense; marking the stub keeps the model from taking it
 * for something it said.
 */
export const NO_ANSWER_STUB = "[No answer: this turn ended before the assistant gave a final answer.]";

/** Answers, in the view only, a tool call left without a result by an interrupted turn. */
export const INTERRUPTED_TOOL_RESULT = "[No result: this tool call was interrupted before it returned. Call the tool again if you still need it.]";

/** Stands in for a tool result with no text: Converse rejects empty and blank content. */
export const EMPTY_TOOL_OUTPUT = "[The tool returned no output.]";

/** Stands in for a user message with no text, for the same reason. */
export const EMPTY_USER_MESSAGE = "[The user sent an empty message.]";

type Content = BaseMessage["content"];

interface ActiveToolResult {
  toolCallId: string;
  toolName: string;
  /** Tokens of the whole output: the artifact's count when offloaded, else the stored content's. */
  outputTokens: number;
  /** The stored output's handle, offloaded or inline (`storedArtifact`). */
  handle?: string;
  /** The content is only a preview: the output is in the artifact store. */
  offloaded: boolean;
  preview: string;
  noticed: boolean;
  /** Stands in for a result the interrupted call never got: no model call ever saw the turn up to it. */
  synthetic?: boolean;
}

interface ActiveItem {
  message: BaseMessage;
  tokens: number;
  result?: ActiveToolResult;
  /** Indices of the stored messages it stands for: one, several when merged, none for a synthetic result. */
  from: number[];
  /** How it differs from the stored message; absent when it is the stored object. */
  repair?: MessageRepair;
}

interface FinishedPair {
  /** Index of the finished turn in the thread, oldest 0. */
  turn: number;
  question: BaseMessage;
  answer: BaseMessage;
  tokens: number;
  stubbed: boolean;
  /** Index of the stored question; of the stored final answer, absent when stubbed. */
  questionIndex: number;
  answerIndex?: number;
}

function isBlank(text: string): boolean {
  return text.trim().length === 0;
}

function isBlankBlock(block: Content[number] | string): boolean {
  if (typeof block === "string") return isBlank(block);
  return block.type === "text" && typeof block.text === "string" && isBlank(block.text);
}

/** The content without blank text (Converse rejects blank text blocks); the same reference when nothing is blank. */
function withoutBlankText(content: Content): Content {
  if (typeof content === "string") return isBlank(content) ? "" : content;
  if (!content.some(isBlankBlock)) return content;
  const kept = content.filter((block) => !isBlankBlock(block));
  return kept.length > 0 ? (kept as Content) : "";
}

function isEmpty(content: Content): boolean {
  return content.length === 0;
}

function toolCallsOf(message: BaseMessage): ToolCall[] {
  return (message as AIMessage).tool_calls ?? [];
}

function zeroRepairs(): ViewRepairs {
  return { syntheticToolResults: 0, orphanToolResults: 0, droppedToolCalls: 0, stubbedAnswers: 0, mergedMessages: 0, droppedMessages: 0 };
}

function userMessage(message: BaseMessage): BaseMessage {
  const content = withoutBlankText(message.content);
  if (content === message.content) return message;
  return new HumanMessage({ content: isEmpty(content) ? EMPTY_USER_MESSAGE : content });
}

/** How the view's form of a user or tool message differs from the stored one: none when it is the stored object. */
function textRepair(stored: BaseMessage, shown: BaseMessage): MessageRepair | undefined {
  if (stored === shown) return undefined;
  return isEmpty(withoutBlankText(stored.content)) ? "empty" : "blank-text";
}

/**
 * A finished turn's (question, final answer); the final answer is its last assistant message, if that
 * makes no tool call, followed by the turn's digest when the policy asks for one.
 */
function finishedPair(
  messages: readonly BaseMessage[],
  turn: number,
  start: number,
  end: number,
  digest?: { policy: TurnDigestPolicy; recent: boolean },
): FinishedPair {
  const question = userMessage(messages[start]);
  let answer: BaseMessage | undefined;
  let answerIndex: number | undefined;
  for (let i = end - 1; i > start; i--) {
    const message = messages[i];
    if (message.type !== "ai") continue;
    if (toolCallsOf(message).length === 0) {
      const { content } = message;
      if (typeof content === "string") answer = isBlank(content) ? undefined : message;
      else {
        const text = messageText(content);
        answer = text.length > 0 ? new AIMessage(text) : undefined;
      }
      if (answer) answerIndex = i;
    }
    break;
  }
  const stubbed = answer === undefined;
  answer ??= new AIMessage(NO_ANSWER_STUB);
  // A stub stays exactly the stub: a failed turn's calls are no answer the model gave.
  const digestText = digest && !stubbed ? turnDigest(messages.slice(start, end), digest.policy, digest.recent) : "";
  if (digestText.length > 0) answer = new AIMessage(`${messageText(answer.content)}\n\n${digestText}`);
  return { turn, question, answer, tokens: countMessageTokens(question) + countMessageTokens(answer), stubbed, questionIndex: start, answerIndex };
}

function mergeContent(a: Content, b: Content): Content {
  if (typeof a === "string" && typeof b === "string") return a.length === 0 ? b : b.length === 0 ? a : `${a}\n\n${b}`;
  const blocks = (content: Content) => (typeof content === "string" ? (content.length > 0 ? [{ type: "text" as const, text: content }] : []) : content);
  return [...blocks(a), ...blocks(b)] as Content;
}

/**
 * The active turn, whole and repaired: each tool call followed by its result (a synthetic error
 * result when it has none), results without their call left out, calls without a usable id left
 * out, empty assistant messages left out, consecutive assistant messages merged.
 */
function activeTurn(
  messages: readonly BaseMessage[],
  start: number,
  repairs: ViewRepairs,
  leftOut: (index: number, reason: LeftOutReason) => void,
): ActiveItem[] {
  const lastAssistant = messages.findLast((message, i) => i > start && message.type === "ai");
  if (lastAssistant && toolCallsOf(lastAssistant).length === 0 && !isEmpty(withoutBlankText(lastAssistant.content))) {
    throw new InvalidModelViewError("the latest turn already has its final answer: there is nothing to answer", CONVERSE_RULES.lastMessageUser);
  }
  const items: ActiveItem[] = [];
  const push = (message: BaseMessage, from: number[], repair?: MessageRepair, result?: ActiveToolResult) =>
    items.push({ message, tokens: countMessageTokens(message), result, from, repair });
  const question = userMessage(messages[start]);
  push(question, [start], textRepair(messages[start], question));

  const usedIds = new Set<string>();
  let pending = new Map<string, { name: string; answered: boolean }>();
  const closePending = () => {
    for (const [id, call] of pending) {
      if (call.answered) continue;
      const message = new ToolMessage({ content: INTERRUPTED_TOOL_RESULT, tool_call_id: id, name: call.name, status: "error" });
      const outputTokens = countMessageTokens(message) - MESSAGE_OVERHEAD_TOKENS;
      push(message, [], undefined, { toolCallId: id, toolName: call.name, outputTokens, offloaded: false, preview: "", noticed: false, synthetic: true });
      repairs.syntheticToolResults++;
    }
    pending = new Map();
  };

  for (let i = start + 1; i < messages.length; i++) {
    const message = messages[i];
    if (message.type === "ai") {
      closePending();
      const calls = toolCallsOf(message);
      const usable = calls.filter((call) => {
        const ok = typeof call.id === "string" && call.id.length > 0 && !usedIds.has(call.id);
        if (ok) usedIds.add(call.id as string);
        return ok;
      });
      repairs.droppedToolCalls += calls.length - usable.length;
      const content = withoutBlankText(message.content);
      if (isEmpty(content) && usable.length === 0) {
        repairs.droppedMessages++;
        leftOut(i, "blank");
        continue;
      }
      for (const call of usable) pending.set(call.id as string, { name: call.name, answered: false });
      const previous = items[items.length - 1].message;
      if (previous.type === "ai") {
        // Only an assistant message without tool calls can be followed by another one here.
        const merged = items.pop() as ActiveItem;
        push(new AIMessage({ content: mergeContent(previous.content, content), tool_calls: usable }), [...merged.from, i], "merged");
        repairs.mergedMessages++;
      } else if (content === message.content && usable.length === calls.length) push(message, [i]);
      else push(new AIMessage({ content, tool_calls: usable }), [i], usable.length === calls.length ? "blank-text" : "tool-calls");
    } else if (message.type === "tool") {
      const tool = message as ToolMessage;
      const call = pending.get(tool.tool_call_id);
      if (!call || call.answered) {
        repairs.orphanToolResults++;
        leftOut(i, "orphan-tool-result");
        continue;
      }
      call.answered = true;
      const artifact = storedArtifact(tool);
      const offloaded = artifact !== undefined && !artifact.inline;
      const content = withoutBlankText(tool.content);
      const shown = isEmpty(content)
        ? new ToolMessage({ content: EMPTY_TOOL_OUTPUT, tool_call_id: tool.tool_call_id, name: tool.name, status: tool.status })
        : content === tool.content
          ? tool
          : new ToolMessage({ content, tool_call_id: tool.tool_call_id, name: tool.name, status: tool.status });
      const tokens = countMessageTokens(shown);
      push(shown, [i], textRepair(tool, shown), {
        toolCallId: tool.tool_call_id,
        toolName: call.name,
        outputTokens: offloaded ? artifact.tokens : tokens - MESSAGE_OVERHEAD_TOKENS,
        handle: artifact?.handle,
        offloaded,
        preview: artifact?.preview ?? messageText(content),
        noticed: false,
      });
    } else if (message.type !== "system") {
      // A second user message cannot occur (the active turn starts at the latest); other types Converse does not take.
      repairs.droppedMessages++;
      leftOut(i, "unsupported-type");
    } else leftOut(i, "system");
  }
  closePending();
  // Text left last by unusable tool calls: the turn is not over, and Converse needs the user to speak last.
  while (items[items.length - 1].message.type === "ai") {
    for (const index of (items.pop() as ActiveItem).from) leftOut(index, "trailing-text");
    repairs.droppedMessages++;
  }
  return items;
}

/** The notice that would stand for an active-turn tool result, with its tokens. */
function noticeFor(item: ActiveItem, reason: OmittedOutput["reason"], threshold: number): { message: ToolMessage; tokens: number; omitted: OmittedOutput } {
  const result = item.result as ActiveToolResult;
  const notice = toolOutputNotice({
    toolName: result.toolName,
    tokens: result.outputTokens,
    handle: result.handle,
    preview: result.preview,
    reason,
    threshold,
  });
  const original = item.message as ToolMessage;
  const message = new ToolMessage({ content: notice, tool_call_id: result.toolCallId, name: original.name ?? result.toolName, status: original.status });
  const omitted: OmittedOutput = { toolCallId: result.toolCallId, toolName: result.toolName, tokens: result.outputTokens, reason };
  if (result.handle) omitted.handle = result.handle;
  return { message, tokens: countMessageTokens(message), omitted };
}

/** Shows the notice instead of the result; returns the change in the view's tokens. */
function applyNotice(item: ActiveItem, notice: { message: ToolMessage; tokens: number }): number {
  const delta = notice.tokens - item.tokens;
  item.message = notice.message;
  item.tokens = notice.tokens;
  (item.result as ActiveToolResult).noticed = true;
  return delta;
}

/** The view's parts, for placing cache points: where the system prompt, the finished-turn block and earlier calls end. */
function cacheLayout(
  view: readonly BaseMessage[],
  firstTokens: number,
  pairs: readonly FinishedPair[],
  active: readonly ActiveItem[],
  blockEndTurn: number,
): CacheLayout {
  const prefixTokens: number[] = [];
  let tokens = firstTokens;
  for (const message of view) prefixTokens.push((tokens += countMessageTokens(message)));
  const system = view[0]?.type === "system" ? 0 : undefined;
  const firstPair = system === undefined ? 0 : 1;
  const earlierEnds: number[] = [];
  let historyBlockEnd: number | undefined;
  // `pairs` is newest first.
  for (let p = pairs.length - 1, question = firstPair; p >= 0; p--, question += 2) {
    if (pairs[p].turn === blockEndTurn) historyBlockEnd = question + 1;
    if (pairs[p].turn > blockEndTurn) earlierEnds.push(question);
  }
  const activeStart = firstPair + 2 * pairs.length;
  // A call of this turn ended at its question or after a group of real tool results; the last item is this call's end.
  for (let i = 0; i < active.length - 1; i++) {
    const groupEnd = active[i].message.type === "tool" && active[i + 1].message.type !== "tool" && !active[i].result?.synthetic;
    if (i === 0 || groupEnd) earlierEnds.push(activeStart + i);
  }
  return { prefixTokens, system, historyBlockEnd, earlierEnds };
}

/**
 * The system prompt, and after it the out-of-sight notice when finished turns before the oldest kept
 * one exist (turns dropped for the budget are not counted: the notice gives a lower bound), and the
 * ledger of the time anchors those turns resolved, when the policy keeps one.
 */
function systemPart(
  policy: ModelViewPolicy,
  hiddenTurns: number,
  ledger: readonly LedgerEntry[],
  standing: readonly StandingEntry[],
  summary: OutOfSightSummary,
): { messages: BaseMessage[]; notice: boolean } {
  const notice = policy.outOfSight && outOfSightNotice(hiddenTurns, policy.outOfSight, summary);
  const text = [policy.systemPrompt, notice, ledgerText(ledger), standingText(standing)]
    .filter((part): part is string => part !== undefined && !isBlank(part))
    .join("\n\n");
  return { messages: text.length === 0 ? [] : [new SystemMessage(text)], notice: notice !== undefined };
}

/** What the view holds: its system part, the kept finished pairs (newest first) and the active turn, after the turns before `firstKept`. */
interface ViewParts {
  system: readonly BaseMessage[];
  outOfSightNotice: boolean;
  firstKept: number;
  pairs: readonly FinishedPair[];
  active: readonly ActiveItem[];
  omittedOutputs: readonly OmittedOutput[];
}

/**
 * The oldest finished turn the view keeps (budget permitting), counted from the conversation's
 * first turn (0), for `finishedTurns` finished turns: it moves `historyBlockTurns` at a time,
 * keeping at least `policy.finishedTurns` and at most `finishedTurns + historyBlockTurns - 1`.
 * Turns before it are never in a view again while the conversation only grows (the working set
 * archives them, `lib/agent/working-set.ts`).
 */
export function firstKeptTurn(finishedTurns: number, policy: Pick<ModelViewPolicy, "finishedTurns" | "historyBlockTurns">): number {
  const blockTurns = Math.max(1, policy.historyBlockTurns ?? DEFAULT_HISTORY_BLOCK_TURNS);
  const beyond = finishedTurns - policy.finishedTurns;
  return beyond <= 0 ? 0 : beyond - (beyond % blockTurns);
}

/** What the thread holds besides its messages. */
export interface ModelViewHistory {
  /** Finished turns before the thread's first message, archived out of it: the view counts turns from the conversation's first. Default: 0. */
  archivedTurns?: number;
  /**
   * The time anchors the archived turns' queries resolved (`ledgerAfterTurns` over them, as the archive
   * step keeps it in the thread's state), for `policy.parameterLedger`. Default: none.
   */
  parameterLedger?: readonly LedgerEntry[];
  /** The standing statements of the archived turns (`standingAfterTurns` over them, kept in the thread's state), for `policy.standingLedger`. Default: none. */
  standingLedger?: readonly StandingEntry[];
  /** What the archived turns were about (`summaryAfterTurns` over them, kept in the thread's state), for the out-of-sight notice. Default: nothing. */
  outOfSight?: OutOfSightSummary;
}

/** The thread's turns before the window, by number: what the archived turns' carried state is folded on with. */
interface TurnsBeforeWindow {
  messages: readonly BaseMessage[];
  turnStarts: readonly number[];
  archived: number;
  firstKept: number;
}

/**
 * Folds each finished turn still in the thread but before `firstKept` into `initial` (what the
 * archived turns left), in order, so the result is the same whether those turns were archived or
 * not, and changes only when `firstKept` moves. `step` gets the turn's number (from 1) and messages.
 */
function foldTurnsBefore<T>(turns: TurnsBeforeWindow, initial: T, step: (acc: T, turnNumber: number, turn: readonly BaseMessage[]) => T): T {
  const { messages, turnStarts, archived, firstKept } = turns;
  let acc = initial;
  for (let t = archived; t < firstKept; t++) acc = step(acc, t + 1, messages.slice(turnStarts[t - archived], turnStarts[t - archived + 1]));
  return acc;
}

/** What the finished turns before `firstKept` were about, for the out-of-sight notice. */
function carriedSummary(turns: TurnsBeforeWindow, history: ModelViewHistory, policy: ModelViewPolicy): OutOfSightSummary {
  if (!policy.outOfSight) return EMPTY_OUT_OF_SIGHT_SUMMARY;
  return foldTurnsBefore(turns, history.outOfSight ?? EMPTY_OUT_OF_SIGHT_SUMMARY, (summary, _n, turn) => summaryAfterTurn(summary, turn));
}

/** The standing ledger of the finished turns before `firstKept`. */
function carriedStanding(turns: TurnsBeforeWindow, history: ModelViewHistory, policy: ModelViewPolicy): StandingEntry[] {
  const bound = policy.standingLedger;
  if (!bound) return [];
  return foldTurnsBefore(turns, boundedStanding(history.standingLedger ?? [], bound), (ledger, n, turn) => standingAfterTurn(ledger, n, turn, bound));
}

/** The ledger of time anchors the finished turns before `firstKept` resolved. */
function carriedLedger(turns: TurnsBeforeWindow, history: ModelViewHistory, policy: ModelViewPolicy): LedgerEntry[] {
  const bound = policy.parameterLedger;
  if (!bound) return [];
  return foldTurnsBefore(turns, boundedLedger(history.parameterLedger ?? [], bound), (ledger, n, turn) => ledgerAfterTurn(ledger, n, turn, bound));
}

/** What the view did with each stored message, from the parts it was built of (see `MessageDisposition`). */
function dispositionsOf(
  messages: readonly BaseMessage[],
  turnStarts: readonly number[],
  leftOut: ReadonlyMap<number, LeftOutReason>,
  parts: ViewParts,
  archived: number,
): MessageDisposition[] {
  const dispositions: MessageDisposition[] = new Array(messages.length);
  const set = (index: number, turn: number | undefined, disposition: MessageDisposition) => {
    dispositions[index] = turn === undefined ? disposition : { ...disposition, turn };
  };
  for (let i = 0; i < turnStarts[0]; i++) set(i, undefined, { fate: "left-out", reason: messages[i].type === "system" ? "system" : "before-first-question" });

  const kept = new Map(parts.pairs.map((pair, p) => [pair.turn, { pair, questionAt: parts.system.length + 2 * (parts.pairs.length - 1 - p) }]));
  const outside: MessageDisposition = parts.outOfSightNotice
    ? { fate: "notice", notice: "out-of-sight", viewIndex: 0 }
    : { fate: "left-out", reason: "outside-window" };
  for (let s = 0; s < turnStarts.length - 1; s++) {
    const t = s + archived;
    const shown = kept.get(t);
    for (let i = turnStarts[s]; i < turnStarts[s + 1]; i++) {
      if (t < parts.firstKept) set(i, t, outside);
      else if (!shown) set(i, t, { fate: "left-out", reason: "over-budget" });
      else if (i === shown.pair.questionIndex) set(i, t, { fate: "condensed", viewIndex: shown.questionAt, part: "question" });
      else if (i === shown.pair.answerIndex) set(i, t, { fate: "condensed", viewIndex: shown.questionAt + 1, part: "answer" });
      else set(i, t, { fate: "left-out", reason: "exchange" });
    }
  }

  const activeTurnIndex = archived + turnStarts.length - 1;
  for (const [index, reason] of leftOut) set(index, activeTurnIndex, { fate: "left-out", reason });
  const omitted = new Map(parts.omittedOutputs.map((o) => [o.toolCallId, o]));
  const activeAt = parts.system.length + 2 * parts.pairs.length;
  parts.active.forEach((item, k) => {
    const viewIndex = activeAt + k;
    const notice = item.result?.noticed ? omitted.get(item.result.toolCallId) : undefined;
    for (const index of item.from) {
      if (notice) {
        const noticed: MessageDisposition = { fate: "notice", notice: "tool-output", viewIndex, reason: notice.reason };
        set(index, activeTurnIndex, notice.handle === undefined ? noticed : { ...noticed, handle: notice.handle });
      } else if (item.repair) set(index, activeTurnIndex, { fate: "repaired", viewIndex, repair: item.repair });
      else set(index, activeTurnIndex, { fate: "sent", viewIndex });
    }
  });
  return dispositions;
}

/**
 * Builds the messages for one model call from the thread's messages and a policy.
 *
 * Contract (checked by the tests in `test/model-view`):
 * - pure: `messages` and the message objects in it are never changed; unchanged messages are
 *   reused, changed ones are new objects;
 * - the view is, most stable first: the system prompt; the finished turns from the oldest kept one,
 *   each exactly (question, final answer) — a turn without a final answer shows its question and
 *   `NO_ANSWER_STUB`; with `policy.turnDigest`, the answer's text is followed by the turn's digest
 *   (`turnDigest`: each tool call's arguments, offloaded outputs' handles, and the outputs of the
 *   block's last `recentTurns` turns and of the turns after the block; never after `NO_ANSWER_STUB`), so a
 *   turn's text changes only when the history block moves; the active turn (from the latest user message) whole, every tool call followed
 *   by its result;
 * - the oldest kept finished turn moves `policy.historyBlockTurns` turns at a time: at least the
 *   last `policy.finishedTurns` finished turns are kept (budget permitting), at most
 *   `finishedTurns + historyBlockTurns - 1`, so the history's beginning changes once a block;
 * - with `policy.outOfSight`, the system part says how many finished turns before the oldest kept one
 *   are out of sight, what they were about, the names they used and the tools that ran in them
 *   (`outOfSightNotice`), changing only when that turn moves;
 * - with `policy.parameterLedger`, the system part then lists the time anchors the queries of the
 *   turns before the oldest kept one resolved (`carriedLedger`), bounded, changing only when that turn moves;
 * - with `policy.standingLedger`, it then lists the standing statements of those turns (`carriedStanding`:
 *   instructions, the user's facts, corrections replacing what they correct), bounded, changing only when that turn moves;
 * - a tool result over `policy.toolOutputTokens`, or offloaded to an artifact, is shown as a notice
 *   naming the tool, its size, the handle and how to read part of it;
 * - `ceil(((viewTokens + toolSchemaTokens) × ratio + offset) × (1 + margin)) <= policy.totalBudget`,
 *   the budget being in the model's tokens (`policy.tokenEstimate`): the oldest pairs are dropped
 *   first, then the largest active-turn results are replaced by notices;
 * - with `policy.cache`, at most `MAX_CACHE_POINTS` cache points (`placeCachePoints`), in view order;
 * - the view satisfies the Bedrock Converse rules (`validateConverseView`), whatever the history,
 *   with its cache points too (`withCachePoints`);
 * - `dispositions` says, for each stored message, what the view did with it: sent as stored (the
 *   same object), repaired, condensed into a pair, replaced by a notice, or left out and why.
 *
 * @throws ContextBudgetExceededError when even the reduced view exceeds the budget.
 * @throws InvalidModelViewError when no valid view exists: the thread has no user message, or it
 *   ends with a final answer (there is nothing to answer).
 */
export function buildModelView(messages: readonly BaseMessage[], policy: ModelViewPolicy, history: ModelViewHistory = {}): ModelView {
  const started = performance.now();
  const archived = history.archivedTurns ?? 0;
  const repairs = zeroRepairs();
  const toolSchemaTokens = policy.toolSchemaTokens ?? DEFAULT_TOOL_SCHEMA_TOKENS;
  const estimate = policy.tokenEstimate ?? EXACT_TOKEN_ESTIMATE;
  const expected = (localTokens: number) => Math.ceil(localTokens * estimate.ratio + estimate.offset);
  const modelTokens = (localTokens: number) => Math.ceil((localTokens * estimate.ratio + estimate.offset) * (1 + estimate.margin));
  const overBudget = (localTokens: number) => modelTokens(localTokens) > policy.totalBudget;

  const turnStarts: number[] = [];
  messages.forEach((message, index) => {
    if (message.type === "human") turnStarts.push(index);
  });
  if (turnStarts.length === 0) throw new InvalidModelViewError("the thread has no user message to answer", CONVERSE_RULES.firstMessageUser);
  for (let i = 0; i < turnStarts[0]; i++) if (messages[i].type !== "system") repairs.droppedMessages++;

  const finishedTurnsInState = turnStarts.length - 1;
  // Turn numbers count from the conversation's first turn, archived ones included, so the window and the notice move as if all were here.
  const finishedTurns = archived + finishedTurnsInState;
  const firstKept = Math.max(archived, firstKeptTurn(finishedTurns, policy));

  const leftOut = new Map<number, LeftOutReason>();
  const active = activeTurn(messages, turnStarts[turnStarts.length - 1], repairs, (index, reason) => leftOut.set(index, reason));
  const before: TurnsBeforeWindow = { messages, turnStarts, archived, firstKept };
  const ledger = carriedLedger(before, history, policy);
  const standing = carriedStanding(before, history, policy);
  const summary = carriedSummary(before, history, policy);
  const { messages: system, notice: outOfSight } = systemPart(policy, firstKept, ledger, standing, summary);
  let total = toolSchemaTokens + countMessagesTokens(system);
  for (const item of active) total += item.tokens;

  const omittedOutputs: OmittedOutput[] = [];
  for (const item of active) {
    const result = item.result;
    if (result && (result.offloaded || result.outputTokens > policy.toolOutputTokens)) {
      const notice = noticeFor(item, "over-threshold", policy.toolOutputTokens);
      total += applyNotice(item, notice);
      omittedOutputs.push(notice.omitted);
    }
  }

  // The block is whole once it holds `finishedTurns` turns; turns after it are appended one a turn.
  const blockEndTurn = policy.finishedTurns > 0 && finishedTurns - firstKept >= policy.finishedTurns ? firstKept + policy.finishedTurns - 1 : -1;
  // A digest shows outputs for the block's last `recentTurns` turns and every turn after the block: which
  // turns those are changes only when the block moves, so the history's text stays a cacheable prefix.
  const firstRecent = policy.turnDigest ? (blockEndTurn < 0 ? firstKept : blockEndTurn - policy.turnDigest.recentTurns + 1) : 0;
  // Newest first, so dropping for the budget pops the oldest.
  const pairs: FinishedPair[] = [];
  for (let t = finishedTurns - 1; t >= firstKept; t--) {
    const digest = policy.turnDigest && { policy: policy.turnDigest, recent: t >= firstRecent };
    const pair = finishedPair(messages, t, turnStarts[t - archived], turnStarts[t - archived + 1], digest);
    pairs.push(pair);
    total += pair.tokens;
  }
  let finishedTurnsDroppedForBudget = 0;
  while (overBudget(total) && pairs.length > 0) {
    total -= (pairs.pop() as FinishedPair).tokens;
    finishedTurnsDroppedForBudget++;
  }

  if (overBudget(total)) {
    const largestFirst = active.filter((item) => item.result && !item.result.noticed).sort((a, b) => b.tokens - a.tokens);
    for (const item of largestFirst) {
      if (!overBudget(total)) break;
      const notice = noticeFor(item, "over-budget", policy.toolOutputTokens);
      // A result already shorter than its notice stays: replacing it would not help.
      if (notice.tokens >= item.tokens) continue;
      total += applyNotice(item, notice);
      omittedOutputs.push(notice.omitted);
    }
  }
  if (overBudget(total)) {
    throw new ContextBudgetExceededError(
      `the model view needs ${modelTokens(total)} tokens, over the budget of ${policy.totalBudget}, ` +
        "with no finished turns and every tool result in the active turn shown as a notice",
      policy.totalBudget,
      modelTokens(total),
    );
  }

  const view: BaseMessage[] = [...system];
  for (let p = pairs.length - 1; p >= 0; p--) {
    view.push(pairs[p].question, pairs[p].answer);
    if (pairs[p].stubbed) repairs.stubbedAnswers++;
  }
  for (const item of active) view.push(item.message);
  const cachePoints = policy.cache ? placeCachePoints(cacheLayout(view, toolSchemaTokens, pairs, active, blockEndTurn), policy.cache, estimate.ratio) : [];
  validateConverseView(withCachePoints(view, cachePoints));

  const parts: ViewParts = { system, outOfSightNotice: outOfSight, firstKept, pairs, active, omittedOutputs };
  return {
    messages: view,
    dispositions: dispositionsOf(messages, turnStarts, leftOut, parts, archived),
    stats: {
      stateMessages: messages.length,
      stateTokens: countStateTokens(messages),
      viewMessages: view.length,
      viewTokens: total - toolSchemaTokens,
      toolSchemaTokens,
      tokenEstimate: { ratio: estimate.ratio, offset: estimate.offset, margin: estimate.margin },
      estimatedInputTokens: expected(total),
      cachePoints,
      finishedTurnsInState,
      ...(archived > 0 && { archivedTurns: archived }),
      finishedTurnsKept: pairs.length,
      finishedTurnsDroppedForBudget,
      omittedOutputs,
      repairs,
      budget: policy.totalBudget,
      buildMs: performance.now() - started,
    },
  };
}
