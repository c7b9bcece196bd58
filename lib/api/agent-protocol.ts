import type { ThreadMessage, ThreadSnapshot } from "../agent/turn-runner.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import type { TurnDocument } from "../store/turn-store.js";
import { messagesSeenBy } from "../store/turn-record.js";
import type { Caller } from "../auth/principal.js";
import type { ApprovalChoice, ApprovalDocument } from "../store/approval-store.js";
import { modelMessageId, type TurnEvent } from "../events/turn-event-types.js";
import { ValidationError } from "../errors.js";
import type { ProtocolStreamMode, ResumeDecision } from "./agent-protocol-schemas.js";
import { PROTOCOL_STREAM_MODES, resumeValue } from "./agent-protocol-schemas.js";

/**
 * The Agent Protocol's view of Threadwise's records, pure: a thread is a conversation, a run is a
 * turn, the state is the durable thread (docs/agent-protocol.md).
 */

export type RunStatus = "pending" | "running" | "error" | "success" | "timeout" | "interrupted";
export type ThreadStatus = "idle" | "busy" | "interrupted" | "error";

/** A message as LangGraph's SDK reads it (a LangChain message dict). */
export interface ProtocolMessage {
  type: "human" | "ai" | "tool" | "system";
  id: string;
  content: string;
  tool_calls?: { id: string; name: string; args: unknown; type: "tool_call" }[];
  tool_call_id?: string;
  name?: string;
  additional_kwargs: Record<string, never>;
  response_metadata: Record<string, never>;
}

/** An interrupt as the protocol shows it: the calls of one turn that wait for a person. */
export interface ProtocolInterrupt {
  id: string;
  value: { approvals: { approvalId: string; toolCallId: string; tool: string; args: unknown; approvers?: unknown }[] };
}

const TYPE_BY_ROLE = { user: "human", assistant: "ai", tool: "tool", system: "system" } as const;

export function protocolMessage(message: ThreadMessage, index: number): ProtocolMessage {
  const out: ProtocolMessage = {
    type: TYPE_BY_ROLE[message.role],
    id: message.id ?? `message-${index}`,
    content: message.content,
    additional_kwargs: {},
    response_metadata: {},
  };
  if (message.toolCalls?.length) out.tool_calls = message.toolCalls.map((c) => ({ id: c.id, name: c.name, args: c.args, type: "tool_call" }));
  if (message.role === "tool") {
    out.tool_call_id = message.toolCallId ?? "";
    if (message.toolName) out.name = message.toolName;
  }
  return out;
}

export function protocolMessages(messages: readonly ThreadMessage[]): ProtocolMessage[] {
  return messages.map(protocolMessage);
}

/** The interrupts a snapshot's pending tasks wait on, keyed by task id, as `Thread.interrupts` has them. */
export function snapshotInterrupts(snapshot: ThreadSnapshot | undefined): Record<string, ProtocolInterrupt[]> {
  const out: Record<string, ProtocolInterrupt[]> = {};
  for (const task of snapshot?.tasks ?? []) {
    const interrupts = task.interrupts.map((i) => ({ id: i.id ?? task.id, value: i.value as ProtocolInterrupt["value"] }));
    if (interrupts.length > 0) out[task.id] = interrupts;
  }
  return out;
}

/**
 * A thread's state as `viewer` may read it: a tool output whose provenance refuses the viewer is a
 * notice, as on `/v1` (`messagesSeenBy`; docs/security.md, "The data boundary in shared threads").
 */
export function snapshotSeenBy<S extends ThreadSnapshot | undefined>(snapshot: S, viewer: Caller): S {
  return snapshot === undefined ? snapshot : { ...snapshot, messages: messagesSeenBy(snapshot.messages, viewer) };
}

/** The state values, with `__interrupt__` when the graph waits (as `runs.wait` returns them). */
export function stateValues(snapshot: ThreadSnapshot | undefined): Record<string, unknown> {
  const values: Record<string, unknown> = { messages: protocolMessages(snapshot?.messages ?? []) };
  const interrupts = Object.values(snapshotInterrupts(snapshot)).flat();
  if (interrupts.length > 0) values.__interrupt__ = interrupts;
  return values;
}

const checkpointRef = (threadId: string, checkpointId: string | undefined) =>
  checkpointId === undefined ? null : { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpointId, checkpoint_map: null };

/** A checkpoint as `ThreadState`. */
export function threadState(threadId: string, snapshot: ThreadSnapshot | undefined) {
  const values = stateValues(snapshot);
  delete values.__interrupt__;
  return {
    values,
    next: snapshot?.next ?? [],
    checkpoint: checkpointRef(threadId, snapshot?.checkpointId) ?? { thread_id: threadId, checkpoint_ns: "", checkpoint_id: null, checkpoint_map: null },
    metadata: snapshot?.metadata ?? {},
    created_at: snapshot?.createdAt ?? null,
    parent_checkpoint: checkpointRef(threadId, snapshot?.parentCheckpointId),
    tasks: (snapshot?.tasks ?? []).map((task) => ({
      id: task.id,
      name: task.name,
      error: null,
      interrupts: task.interrupts.map((i) => ({ id: i.id ?? task.id, value: i.value })),
      checkpoint: null,
      state: null,
    })),
  };
}

/** A turn's status as a run's. A superseded turn ended without an answer: an error. */
export function runStatusOf(turn: TurnDocument): RunStatus {
  switch (turn.status) {
    case "queued":
      return "pending";
    case "running":
      return "running";
    case "awaiting_approval":
      return "interrupted";
    case "completed":
      return "success";
    default:
      return "error";
  }
}

/** The thread's status from its latest turn. */
export function threadStatusOf(latest: TurnDocument | null): ThreadStatus {
  if (!latest) return "idle";
  if (latest.status === "queued" || latest.status === "running") return "busy";
  if (latest.status === "awaiting_approval") return "interrupted";
  return latest.status === "failed" ? "error" : "idle";
}

export function threadView(conversation: ConversationDocument, latest: TurnDocument | null, snapshot: ThreadSnapshot | undefined) {
  const values = stateValues(snapshot);
  delete values.__interrupt__;
  return {
    thread_id: conversation._id,
    created_at: conversation.createdAt.toISOString(),
    updated_at: conversation.updatedAt.toISOString(),
    state_updated_at: (latest?.updatedAt ?? conversation.updatedAt).toISOString(),
    metadata: conversation.metadata ?? {},
    status: threadStatusOf(latest),
    values,
    interrupts: snapshotInterrupts(snapshot),
    ...(latest?.status === "failed" && latest.error && { error: latest.error.code }),
  };
}

export function runView(turn: TurnDocument, assistantId: string) {
  return {
    run_id: turn._id,
    thread_id: turn.conversationId,
    assistant_id: assistantId,
    created_at: turn.createdAt.toISOString(),
    updated_at: turn.updatedAt.toISOString(),
    status: runStatusOf(turn),
    metadata: {},
    multitask_strategy: "reject",
    kwargs: {},
    ...(turn.error && { error: turn.error }),
  };
}

/** The question a run's input asks: exactly one user message, text only. */
export function questionOf(input: { messages: { type?: string; role?: string; content: string | { type: "text"; text: string }[] }[] }): string {
  const [message, ...rest] = input.messages;
  if (rest.length > 0) {
    throw new ValidationError("a run takes one new message: the thread keeps the history", [{ path: "input.messages", message: "exactly one message" }]);
  }
  const kind = message.type ?? message.role;
  if (kind !== "human" && kind !== "user") {
    throw new ValidationError("a run's message must be the user's", [{ path: "input.messages.0.type", message: 'expected "human" (or role "user")' }]);
  }
  return typeof message.content === "string" ? message.content : message.content.map((b) => b.text).join("\n");
}

/** The stream modes asked for; the Agent Server's default is `values`. */
export function streamModesOf(raw: string | string[] | undefined): ProtocolStreamMode[] {
  const asked = raw === undefined ? ["values"] : Array.isArray(raw) ? raw : [raw];
  const unknown = asked.filter((m) => !(PROTOCOL_STREAM_MODES as readonly string[]).includes(m));
  if (unknown.length > 0) {
    throw new ValidationError(`stream_mode ${unknown.join(", ")} is not served`, [
      { path: "stream_mode", message: `one or more of ${PROTOCOL_STREAM_MODES.join(", ")}` },
    ]);
  }
  return [...new Set(asked)] as ProtocolStreamMode[];
}

function choiceOf(decision: ResumeDecision): ApprovalChoice {
  const d = typeof decision === "string" ? { decision } : decision;
  if (d.decision === "edit") return { kind: "edit", args: d.args };
  if (d.decision === "reject") return { kind: "reject", ...("reason" in d && d.reason !== undefined && { reason: d.reason }) };
  return { kind: "approve" };
}

/**
 * The decisions a `Command`'s resume value takes on the pending approvals: one decision for every
 * waiting call, or decisions by approval id (each must be waiting; every waiting one decided).
 */
export function decisionsOf(resume: unknown, pending: readonly ApprovalDocument[]): { approvalId: string; choice: ApprovalChoice }[] {
  const parsed = resumeValue.safeParse(resume);
  if (!parsed.success) {
    throw new ValidationError("command.resume is not a decision", [
      { path: "command.resume", message: '"approve", "reject", {decision, reason?|args?}, or {decisions: {approvalId: decision}}' },
    ]);
  }
  if (pending.length === 0)
    throw new ValidationError("nothing on this thread waits for a decision", [{ path: "command.resume", message: "no pending interrupt" }]);
  const value = parsed.data;
  if (typeof value === "object" && "decisions" in value) {
    const ids = new Set(pending.map((a) => a._id));
    const unknown = Object.keys(value.decisions).filter((id) => !ids.has(id));
    const missing = [...ids].filter((id) => !(id in value.decisions));
    if (unknown.length > 0 || missing.length > 0) {
      throw new ValidationError("command.resume must decide every waiting call, by approval id", [
        ...unknown.map((id) => ({ path: `command.resume.decisions.${id}`, message: "not a waiting approval" })),
        ...missing.map((id) => ({ path: `command.resume.decisions.${id}`, message: "waiting, not decided" })),
      ]);
    }
    return pending.map((a) => ({ approvalId: a._id, choice: choiceOf(value.decisions[a._id]) }));
  }
  if (typeof value === "object" && value.decision === "edit" && pending.length > 1) {
    throw new ValidationError("an edit names its call: use {decisions: {approvalId: …}}", [{ path: "command.resume", message: "several calls wait" }]);
  }
  return pending.map((a) => ({ approvalId: a._id, choice: choiceOf(value) }));
}

/** One server-sent event of the protocol; `id` lets a client reconnect with `Last-Event-ID`. */
export function protocolFrame(event: string, data: unknown, id?: string): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Turns a turn's events into the protocol's, for the modes asked: text deltas become
 * `messages` tuples (or `messages/partial`), progress and tools `custom` (and `events`), and the
 * run's end `values` and `updates` read from the thread. Stateful per stream: it accumulates the
 * partial message of each model call.
 */
export class ProtocolStreamEncoder {
  private readonly partial = new Map<number, string>();
  private readonly announced = new Set<number>();

  constructor(
    private readonly modes: readonly ProtocolStreamMode[],
    private readonly run: { runId: string; threadId: string },
  ) {}

  private has(mode: ProtocolStreamMode): boolean {
    return this.modes.includes(mode);
  }

  /** The first frame: which run this is. */
  metadata(): string {
    return protocolFrame("metadata", { run_id: this.run.runId, thread_id: this.run.threadId, attempt: 1 });
  }

  /** The state at the run's start (its question in place), for `values`. */
  start(values: Record<string, unknown>): string[] {
    const frames: string[] = [];
    if (this.has("values")) frames.push(protocolFrame("values", values));
    if (this.has("events")) frames.push(protocolFrame("events", this.streamEvent("on_chain_start", "threadwise", { input: values })));
    return frames;
  }

  private messageId(modelCall: number): string {
    return modelMessageId(this.run.runId, modelCall);
  }

  private meta(node: string) {
    return { langgraph_node: node, run_id: this.run.runId, thread_id: this.run.threadId };
  }

  private streamEvent(event: string, name: string, data: Record<string, unknown>) {
    return { event, name, run_id: this.run.runId, data, metadata: this.meta(name), tags: [] };
  }

  /** The frames for one of the turn's own events, tagged with its id for reconnects. */
  event(event: TurnEvent): string[] {
    const id = String(event.id);
    const frames: string[] = [];
    if (event.type === "text") {
      const chunk = { type: "AIMessageChunk", id: this.messageId(event.modelCall), content: event.delta, tool_calls: [], tool_call_chunks: [] };
      if (this.has("messages-tuple")) frames.push(protocolFrame("messages", [chunk, this.meta("agent")], id));
      if (this.has("messages")) {
        const text = (this.partial.get(event.modelCall) ?? "") + event.delta;
        this.partial.set(event.modelCall, text);
        if (!this.announced.has(event.modelCall)) {
          this.announced.add(event.modelCall);
          frames.push(protocolFrame("messages/metadata", { [chunk.id]: { metadata: this.meta("agent") } }, id));
        }
        frames.push(protocolFrame("messages/partial", [{ ...chunk, type: "ai", content: text }], id));
      }
      if (this.has("events")) frames.push(protocolFrame("events", this.streamEvent("on_chat_model_stream", "model", { chunk }), id));
      return frames;
    }
    if (event.type === "progress" || event.type === "tool_started" || event.type === "tool_finished") {
      const { id: _id, ...body } = event;
      if (this.has("custom")) frames.push(protocolFrame("custom", body, id));
      if (this.has("events") && event.type !== "progress") {
        const kind = event.type === "tool_started" ? "on_tool_start" : "on_tool_end";
        frames.push(protocolFrame("events", this.streamEvent(kind, event.tool, { tool_call_id: event.toolCallId }), id));
      }
    }
    return frames;
  }

  /**
   * The run's end: the messages it added as node updates, the final state, an interrupt when it
   * waits for approvals, or the error that ended it.
   */
  end(outcome: {
    values: Record<string, unknown>;
    added: ProtocolMessage[];
    interrupts: ProtocolInterrupt[];
    error?: { code: string; message: string };
  }): string[] {
    const frames: string[] = [];
    if (this.has("messages")) {
      for (const message of outcome.added.filter((m) => m.type === "ai" || m.type === "tool")) frames.push(protocolFrame("messages/complete", [message]));
    }
    if (this.has("updates")) {
      for (const group of nodeUpdates(outcome.added)) frames.push(protocolFrame("updates", group));
      if (outcome.interrupts.length > 0) frames.push(protocolFrame("updates", { __interrupt__: outcome.interrupts }));
    }
    if (this.has("values")) frames.push(protocolFrame("values", outcome.values));
    if (this.has("events")) frames.push(protocolFrame("events", this.streamEvent("on_chain_end", "threadwise", { output: outcome.values })));
    if (outcome.error) frames.push(protocolFrame("error", { error: outcome.error.code, message: outcome.error.message }));
    return frames;
  }
}

/** The run's new messages as the agent and tools nodes returned them, step by step. */
function nodeUpdates(added: readonly ProtocolMessage[]): Record<string, { messages: ProtocolMessage[] }>[] {
  const groups: Record<string, { messages: ProtocolMessage[] }>[] = [];
  let current: { node: string; messages: ProtocolMessage[] } | undefined;
  for (const message of added) {
    if (message.type !== "ai" && message.type !== "tool") continue;
    const node = message.type === "ai" ? "agent" : "tools";
    if (current?.node !== node) {
      current = { node, messages: [] };
      groups.push({ [node]: { messages: current.messages } });
    }
    current.messages.push(message);
  }
  return groups;
}
