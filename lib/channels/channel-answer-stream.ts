import type { TurnEvent } from "../events/turn-event.js";

/**
 * A turn's answer as it is written, in a channel that can show it so (Slack's streaming
 * messages, Teams' streaming in 1:1 chats). `onEvent` never blocks the turn: the calls it makes
 * are queued and coalesced. Exactly one of `finish`, `fail` or `abandon` ends it.
 */
export interface ChannelAnswerStream {
  onEvent(event: TurnEvent): void;
  /** Delivers the final answer: closes the stream, or sends one message where it could not stream. */
  finish(answer: string): Promise<void>;
  /** Tells the user the turn failed, in the stream if one is open. */
  fail(error: unknown): Promise<void>;
  /** The attempt stops (the turn will be retried): closes an open stream without an answer. */
  abandon(): Promise<void>;
}
