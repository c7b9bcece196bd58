import type { BaseMessage } from "@langchain/core/messages";
import { NotLatestTurnError } from "../errors.js";
import type { MessageStore } from "../store/message-store.js";
import { hasEnded } from "../store/turn-lifecycle.js";
import type { ClaimedTurn, TurnStore } from "../store/turn-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { AgentGraph } from "./graph.js";

/** Where a replacing turn's thread starts, and the messages it removes there (only without a turn boundary to fork from). */
export interface ForkPoint {
  checkpointId?: string;
  remove: string[];
}

/**
 * A turn that replaces the conversation's latest finished turn (an edited or regenerated last
 * question, docs/api.md): whether it may, where its branch of the thread starts, and marking the
 * replaced turn once the new branch is in the thread.
 */
export class TurnFork {
  constructor(
    private readonly deps: {
      graph: Pick<AgentGraph, "getState" | "getStateHistory">;
      turns: Pick<TurnStore, "latest" | "markReplaced">;
      messages: Pick<MessageStore, "markReplaced">;
    },
  ) {}

  /** Only the latest begun turn, once finished, can be replaced; checked under the lease, so no turn begins meanwhile. */
  async assertReplaceable(conversationId: string, turnId: string): Promise<void> {
    const latest = await this.deps.turns.latest(conversationId);
    if (latest?._id !== turnId || !hasEnded(latest.status)) {
      throw new NotLatestTurnError(`turn ${turnId} is not the conversation's latest finished turn`, turnId);
    }
  }

  /**
   * Where a replacing turn starts: the newest checkpoint holding exactly the thread's messages
   * before the replaced question (the turn boundary before it: the replaced turn's first
   * checkpoint, which prune keeps, or the previous turn's end), so the original branch is left as
   * it was. Without such a checkpoint (a thread pruned before turn boundaries were kept) it starts
   * from the latest checkpoint and removes the replaced turn's messages, which older checkpoints
   * still hold.
   */
  async forkPoint(conversationId: string, replaced: string): Promise<ForkPoint> {
    const { graph } = this.deps;
    const head = await graph.getState({ configurable: { thread_id: conversationId } });
    const headIds = ((head.values as { messages?: BaseMessage[] }).messages ?? []).map((m) => m.id ?? "");
    const at = headIds.indexOf(`${replaced}:user`);
    const before = at < 0 ? headIds : headIds.slice(0, at);
    for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: conversationId } })) {
      const ids = ((snapshot.values as { messages?: BaseMessage[] }).messages ?? []).map((m) => m.id ?? "");
      // A turn's first checkpoint (source "input") still has the question it began with pending; a run with new input discards it.
      const boundary = snapshot.next.length === 0 || snapshot.metadata?.source === "input";
      // The replaced turn may have archived older turns first: its boundary holds them before the same messages.
      const from = ids.length - before.length;
      if (boundary && from >= 0 && (before.length > 0 || from === 0) && before.every((id, i) => id === ids[from + i])) {
        return { checkpointId: snapshot.config.configurable?.checkpoint_id as string, remove: [] };
      }
    }
    return { checkpointId: head.config.configurable?.checkpoint_id as string | undefined, remove: at < 0 ? [] : headIds.slice(at) };
  }

  /** Marks the turn this one replaces, in the record and on its turn (idempotent: a resumed turn marks again). */
  async markReplacement(turn: ClaimedTurn, fence: WriteFence): Promise<void> {
    if (!turn.replaces) return;
    await this.deps.messages.markReplaced(turn.replaces, turn._id, fence);
    await this.deps.turns.markReplaced(turn.replaces, turn, fence);
  }
}
