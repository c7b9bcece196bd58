import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ConflictError, NotFoundError, StaleWriterError } from "../errors.js";
import type { StructuredLogger } from "../logger.js";
import { messageText } from "../model-view/message-text.js";
import { stampTokenCount } from "../model-view/token-counter.js";
import type { ConversationStore } from "../store/conversation-store.js";
import type { ConversationLease } from "../store/lease.js";
import type { MessageStore } from "../store/message-store.js";
import { addUsage, ZERO_USAGE } from "../store/turn-record.js";
import type { ClaimedTurn, TurnDocument, TurnStore } from "../store/turn-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { RecordedToolCall } from "../tools/tool-idempotency-guard.js";
import { type FinalEventBody, TURN_SUPERSEDED_EVENT } from "../events/turn-event-types.js";
import type { TurnEvents } from "../events/turn-events.js";
import type { AgentGraph } from "./graph.js";
import type { ThreadwiseSaver } from "../store/threadwise-saver.js";

/** Turns one sweep looks at, least recently updated first; the next sweep takes the rest. */
export const DEFAULT_RECOVERY_SWEEP_LIMIT = 50;
/** The code of a turn recovery ended because nothing could resume it (docs/recovery.md). */
export const INTERRUPTED_CODE = "interrupted" as const;
/** Characters of the first question kept as a conversation's title, as the runner keeps them. */
const TITLE_CHARS = 80;

/** How recovery ended one turn: its new status, `resumed` (handed to the queue), or `skipped` (not orphaned, or taken meanwhile). */
export type RecoveryOutcome = "completed" | "failed" | "superseded" | "resumed" | "skipped";

/** What one sweep did: turns it found running under a lapsed lease, and how each ended. */
export interface RecoverySweepResult {
  found: number;
  completed: number;
  failed: number;
  superseded: number;
  resumed: number;
}

export interface TurnRecoveryDeps {
  graph: AgentGraph;
  conversations: ConversationStore;
  messages: MessageStore;
  turns: TurnStore;
  lease: ConversationLease;
  threads: Pick<ThreadwiseSaver, "claimThread">;
  /** Where the final event of a turn recovery ends is recorded, closing its stream. Default: none. */
  events?: TurnEvents;
  /** What the idempotency record of a tool call says (`ToolIdempotencyGuard.recorded`). Default: no records (every unanswered call counts as not run). */
  toolCalls?: { recorded(ctx: { conversationId: string; toolCallId: string }): Promise<RecordedToolCall | undefined> };
  /**
   * Hands a turn to the queue to run again from where its thread is (the job it recorded as its
   * origin). Default: none; the sweep then ends the turns it cannot finish from the thread.
   */
  resume?(turn: TurnDocument): Promise<void>;
  /**
   * How long after its lease lapsed a turn whose attempt ran a queue delivery is left to the
   * queue, which delivers the job again once its visibility lapses (a second resume would only
   * meet the first's lease). Default: twice the lease's TTL.
   */
  redeliveryGraceMs?: number;
  logger?: StructuredLogger;
}

/** The last message of `messages` if it is a final answer (an AI message without tool calls). */
function finalAnswer(messages: readonly BaseMessage[]): AIMessage | undefined {
  const last = messages[messages.length - 1];
  return last instanceof AIMessage && !last.tool_calls?.length ? last : undefined;
}

/**
 * Finishes turns whose attempt died (docs/recovery.md): the thread is the source of truth. An
 * answer the thread holds becomes the turn's answer (once); a turn the thread moved past is
 * superseded; one that can go on is handed to the queue, whose job resumes it through the
 * runner and the tools' idempotency guard; any other ends `failed` with code `interrupted`, its
 * unanswered tool calls answered from their idempotency records. Every ending records the
 * turn's final event, so no stream stays open.
 *
 * Two callers: the sweep (scheduled in AWS, on start and on a timer locally), which takes the
 * conversation's lease itself, and the runner, whose new turn finishes the turns older attempts
 * left under the lease it holds (`finishOthers`).
 */
export class TurnRecovery {
  constructor(private readonly deps: TurnRecoveryDeps) {}

  /** Recovers up to `limit` running turns whose conversation's lease lapsed; turns under a held lease are left to their holder. */
  async sweep(options: { limit?: number } = {}): Promise<RecoverySweepResult> {
    const held = await this.deps.turns.listHeld(options.limit ?? DEFAULT_RECOVERY_SWEEP_LIMIT);
    const result: RecoverySweepResult = { found: 0, completed: 0, failed: 0, superseded: 0, resumed: 0 };
    for (const turn of held) {
      const outcome = await this.recover(turn._id).catch((error: unknown) => {
        this.deps.logger?.warn("turn recovery failed", { turnId: turn._id, error: error instanceof Error ? error.name : "unknown" });
        return "skipped" as const;
      });
      if (outcome === "skipped") continue;
      result.found += 1;
      result[outcome] += 1;
    }
    return result;
  }

  /**
   * Recovers one turn left `running`: takes its conversation's lease (a held lease means its
   * attempt, or a newer turn, is alive: `skipped`), claims the turn and ends it from the thread.
   */
  async recover(turnId: string): Promise<RecoveryOutcome> {
    const { turns, lease, threads } = this.deps;
    const found = await turns.get(turnId);
    if (found?.status !== "running") return "skipped";
    if (found.queueDelivery && (await this.lapsedForMs(found.conversationId)) < (this.deps.redeliveryGraceMs ?? 2 * lease.ttlMs)) return "skipped";
    let fence: WriteFence;
    try {
      fence = await lease.acquire(found.conversationId, `recovery:${turnId}`);
    } catch (error) {
      if (error instanceof ConflictError || error instanceof NotFoundError) return "skipped";
      throw error;
    }
    let ended: { outcome: RecoveryOutcome; final?: FinalEventBody; turn?: TurnDocument } = { outcome: "skipped" };
    try {
      await threads.claimThread(found.conversationId, fence.epoch as number);
      const claim = await turns.claim(turnId, fence);
      if (!claim.claimed) return "skipped";
      ended = { ...(await this.settle(claim.turn, fence, true)), turn: claim.turn };
    } catch (error) {
      if (error instanceof StaleWriterError) return "skipped";
      throw error;
    } finally {
      await lease.release(fence).catch(() => undefined);
    }
    if (ended.final) await this.finishEvents(turnId, ended.final, fence);
    // Handed on after the lease is released, so the job's attempt does not meet it held.
    if (ended.outcome === "resumed" && ended.turn) await this.deps.resume?.(ended.turn);
    this.deps.logger?.info("turn recovered", { turnId, outcome: ended.outcome });
    return ended.outcome;
  }

  /**
   * Finishes the conversation's turns that older attempts left `running`, for the turn `current`
   * whose attempt now holds the lease: an answer in the thread is recorded, others end
   * `failed: interrupted` with their tool calls answered. Returns how many it finished.
   */
  async finishOthers(current: ClaimedTurn, fence: WriteFence): Promise<number> {
    const { turns } = this.deps;
    let finished = 0;
    for (const id of await turns.heldByOthers(current, fence)) {
      const claim = await turns.claim(id, fence).catch((error: unknown) => (error instanceof StaleWriterError ? undefined : Promise.reject(error)));
      if (!claim?.claimed) continue;
      const { final } = await this.settle(claim.turn, fence, false);
      if (final) await this.finishEvents(id, final, this.deps.lease.existing(fence.conversationId));
      finished += 1;
    }
    return finished;
  }

  /** Ends a claimed turn from what its thread holds; `mayResume`: hand it to the queue when it can go on. */
  private async settle(turn: ClaimedTurn, fence: WriteFence, mayResume: boolean): Promise<{ outcome: RecoveryOutcome; final?: FinalEventBody }> {
    const { graph, turns } = this.deps;
    const snapshot = await graph.getState({ configurable: { thread_id: turn.conversationId } });
    const messages = (snapshot.values as { messages?: BaseMessage[] }).messages ?? [];
    const questionId = `${turn._id}:user`;
    const at = messages.findLastIndex((m) => m.id === questionId);
    const latestQuestion = messages.findLast((m) => m.getType() === "human");
    if (at >= 0 && latestQuestion?.id !== questionId) {
      await turns.supersede(turn, fence);
      return { outcome: "superseded", final: TURN_SUPERSEDED_EVENT };
    }
    const answer = at >= 0 && snapshot.next.length === 0 ? finalAnswer(messages) : undefined;
    if (answer && turn.seq !== undefined) return this.recordAnswer(turn, turn.seq, messageText(messages[at].content), messageText(answer.content), fence);
    if (mayResume && turn.origin && this.deps.resume) {
      await turns.requeue(turn, fence);
      return { outcome: "resumed" };
    }
    if (at >= 0) await this.answerOpenCalls(turn, messages.slice(at + 1), fence);
    const error = { code: INTERRUPTED_CODE, message: "the turn was interrupted and could not be resumed" };
    await turns.fail(turn, error, fence);
    return { outcome: "failed", final: { type: "failed", ...error } };
  }

  /** The thread's answer becomes the turn's, as the runner records one: record, then turn, then the conversation's title. */
  private async recordAnswer(
    turn: ClaimedTurn,
    seq: number,
    question: string,
    answer: string,
    fence: WriteFence,
  ): Promise<{ outcome: RecoveryOutcome; final: FinalEventBody }> {
    const { turns, messages, conversations } = this.deps;
    const calls = await turns.listCalls(turn._id);
    const usage = calls.reduce((u, c) => addUsage(u, c.usage), ZERO_USAGE);
    const toolCalls = calls.reduce((n, c) => n + c.toolCalls.length, 0);
    await messages.append({ turnId: turn._id, seq, role: "assistant", content: answer }, fence);
    await turns.complete(turn, { answer, usage, toolCalls, durationMs: Date.now() - turn.createdAt.getTime() }, fence);
    await conversations.touch(turn.conversationId, { title: question.slice(0, TITLE_CHARS) });
    return { outcome: "completed", final: { type: "done", answer, usage } };
  }

  /**
   * The model's last tool calls of the turn that have no result get one in the thread: the
   * stored result when the idempotency record says the effect happened, else that the call did
   * not run (or, interrupted while it ran, that its outcome is unknown). Never run again here.
   */
  private async answerOpenCalls(turn: ClaimedTurn, since: readonly BaseMessage[], fence: WriteFence): Promise<void> {
    const asked = since.findLast((m): m is AIMessage => m instanceof AIMessage && (m.tool_calls?.length ?? 0) > 0);
    if (!asked) return;
    const answered = new Set(since.flatMap((m) => (m instanceof ToolMessage ? [m.tool_call_id] : [])));
    const open = (asked.tool_calls ?? []).filter((c) => c.id && !answered.has(c.id));
    if (open.length === 0) return;
    const results = await Promise.all(
      open.map(async (call) => {
        const id = call.id as string;
        const record = await this.deps.toolCalls?.recorded({ conversationId: turn.conversationId, toolCallId: id });
        const content =
          record?.status === "completed"
            ? record.result
            : record
              ? "Interrupted while it ran: whether this call took effect is unknown, and it was not run again. Tell the user; call it again only if they ask."
              : "Not run: the turn was interrupted before this call ran.";
        const status = record?.status === "completed" ? "success" : "error";
        return stampTokenCount(new ToolMessage({ tool_call_id: id, name: call.name, status, content }));
      }),
    );
    await this.deps.graph.updateState({ configurable: { thread_id: turn.conversationId, fence_epoch: fence.epoch } }, { messages: results }, "tools");
  }

  /** How long ago the conversation's lease lapsed (0 while it holds; a released lease lapsed long ago). */
  private async lapsedForMs(conversationId: string): Promise<number> {
    const doc = await this.deps.conversations.collection.findOne({ _id: conversationId }, { projection: { lease: 1 } });
    if (!doc?.lease) return Number.POSITIVE_INFINITY;
    return Math.max(0, Date.now() - doc.lease.expiresAt.getTime());
  }

  /** Records the turn's final event under a fence that holds while the conversation exists: its followers' streams end. */
  private async finishEvents(turnId: string, final: FinalEventBody, fence: WriteFence): Promise<void> {
    const events = this.deps.events;
    if (!events) return;
    const existing = this.deps.lease.existing(fence.conversationId);
    const recorder = await events.record(turnId, existing);
    await recorder.finish(final, existing).catch(() => undefined);
  }
}
