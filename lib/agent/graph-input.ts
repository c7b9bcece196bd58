import { AIMessage, type BaseMessage, type ToolMessage } from "@langchain/core/messages";
import { notRunMessage, type PendingCall } from "./approval-gate.js";

/** The thread as the turn found it: its latest checkpoint's messages, the nodes to run next, the calls its interrupts wait on. */
export interface ThreadAtStart {
  messages: readonly BaseMessage[];
  next: readonly string[];
  waiting: readonly PendingCall[];
}

/**
 * How an attempt goes into the graph, decided from the thread alone:
 * - `ask`: the turn's question is not in the thread yet; it goes in, after `unanswered` (the calls
 *   an earlier turn paused on, answered as not run, so no call is left unanswered);
 * - `continue`: the question is the thread's latest and the graph stopped mid-turn; it goes on
 *   from the checkpoint;
 * - `answered`: the graph already answered this turn (an attempt that died before recording it);
 * - `decisions`: the turn paused on `calls`; it resumes once each is decided, or waits;
 * - `superseded`: the thread holds the question, but a later one came after it.
 */
export type GraphInput =
  | { kind: "ask"; unanswered: ToolMessage[] }
  | { kind: "continue" }
  | { kind: "answered"; answer: AIMessage }
  | { kind: "decisions"; calls: PendingCall[] }
  | { kind: "superseded" };

/** Why an earlier turn's waiting calls were not run, as the model reads it. */
const NEW_QUESTION_FIRST = { kind: "reject", by: "nobody", reason: "a new question came first" } as const;

/**
 * The graph-input decision of a turn whose question has the message id `questionId`. `thread` is
 * undefined when the turn has just begun and nothing could be in the thread yet (it is then not
 * read): the question goes in. Pure: reads nothing, writes nothing.
 */
export function graphInput(thread: ThreadAtStart | undefined, questionId: string): GraphInput {
  if (!thread) return { kind: "ask", unanswered: [] };
  const { messages, next, waiting } = thread;
  const started = messages.findLast((m) => m.getType() === "human")?.id === questionId;
  if (!started && messages.some((m) => m.id === questionId)) return { kind: "superseded" };
  const last = messages[messages.length - 1];
  if (started && next.length === 0 && last instanceof AIMessage && !last.tool_calls?.length) return { kind: "answered", answer: last };
  if (started && waiting.length > 0) return { kind: "decisions", calls: [...waiting] };
  if (started) return { kind: "continue" };
  const unanswered =
    waiting.length > 0 && last instanceof AIMessage
      ? (last.tool_calls ?? []).map((c) => notRunMessage({ id: c.id ?? "", name: c.name }, NEW_QUESTION_FIRST))
      : [];
  return { kind: "ask", unanswered };
}
