import type { Usage } from "../store/turn-record.js";

/**
 * What a turn tells whoever watches it, in order: every channel (SSE, Slack, Teams, the console)
 * renders these same events (docs/streaming.md). `id` counts up from 1 within a turn, across its
 * attempts, so a client that reconnects names the last one it saw.
 */
export type TurnEventBody =
  /** A model call begins; `modelCall` counts from 0 within the turn. */
  | { type: "progress"; step: "model"; modelCall: number }
  | { type: "tool_started"; tool: string; toolCallId: string }
  | { type: "tool_finished"; tool: string; toolCallId: string; status: "success" | "error" }
  /** Answer text as the model writes it; the answer is the text of the turn's last model call. */
  | { type: "text"; modelCall: number; delta: string }
  /**
   * The turn paused: these calls wait for a person's decision (docs/approvals.md). It ends this
   * stream; once they are decided, the turn continues under the same id and its events follow this one.
   */
  | { type: "approval_requested"; approvals: { approvalId: string; toolCallId: string; tool: string; expiresAt: string }[] }
  | { type: "done"; answer: string; usage: Usage }
  | { type: "failed"; code: string; message: string };

export type TurnEvent = TurnEventBody & { id: number };

/** The events after which a turn says nothing more (`approval_requested`: until its calls are decided). */
export type FinalEventBody = Extract<TurnEventBody, { type: "done" | "failed" | "approval_requested" }>;

export type TurnEventType = TurnEventBody["type"];

/**
 * The id of the message model call `modelCall` of turn `turnId` writes: the graph stamps it on the
 * model's answer and the Agent Protocol names that call's `text` deltas with it, so a streamed
 * chunk and the message the thread keeps are one message (docs/agent-protocol.md).
 */
export function modelMessageId(turnId: string, modelCall: number): string {
  return `run-${turnId}-${modelCall}`;
}

/** The event names, as SSE and the OpenAPI document give them. */
export const TURN_EVENT_TYPES = [
  "progress",
  "tool_started",
  "tool_finished",
  "text",
  "approval_requested",
  "done",
  "failed",
] as const satisfies readonly TurnEventType[];

/** The final event of a turn a later turn replaced: the runner emits it, a follower infers it from the record. */
export const TURN_SUPERSEDED_EVENT = {
  type: "failed",
  code: "turn_superseded",
  message: "the turn was superseded by a later turn",
} as const satisfies TurnEventBody;

/** The names of the final events, for a client that reads them off the wire (`npm run smoke`). */
export const FINAL_EVENT_TYPES: ReadonlySet<string> = new Set(["done", "failed", "approval_requested"] satisfies FinalEventBody["type"][]);

export function isFinalEvent(event: TurnEventBody): event is FinalEventBody {
  return FINAL_EVENT_TYPES.has(event.type);
}
