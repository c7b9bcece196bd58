import type { StructuredLogger } from "../logger.js";
import type { TurnIndexer } from "../recall/turn-indexer.js";
import type { RetentionPolicy } from "../store/retention.js";
import type { WriteFence } from "../store/write-fence.js";

/** What ends a completed turn's work on its conversation, each part over the store that owns it. */
export interface EndOfTurnDeps {
  /** Indexes the finished turns for `search_conversation` (docs/recall.md). */
  indexer: Pick<TurnIndexer, "indexFinishedTurns">;
  /** Keeps the thread's checkpoints linear and bounded (`ThreadwiseSaver.prune`, docs/storage.md). */
  checkpoints: { prune(threadId: string, options: { fenceEpoch?: number }): Promise<unknown> };
  /** Moves the conversation's retention deadline on (docs/data-lifecycle.md). */
  retention: Pick<RetentionPolicy, "touch">;
  /** Default: silent. */
  logger?: StructuredLogger;
}

/**
 * The runner's last step of a completed turn, while it still holds the conversation: index the
 * finished turns for recall, prune the thread's checkpoints under the turn's fence, and move the
 * conversation's retention on. The turn is complete whatever indexing does: a turn left out is
 * indexed with the next one.
 */
export class EndOfTurn {
  constructor(private readonly deps: EndOfTurnDeps) {}

  async run(conversationId: string, fence: WriteFence): Promise<void> {
    const { indexer, checkpoints, retention, logger } = this.deps;
    await indexer.indexFinishedTurns(conversationId, fence).catch((error: unknown) => {
      logger?.warn("recall indexing failed", { conversationId, error: error instanceof Error ? error.name : "Error" });
    });
    await checkpoints.prune(conversationId, { fenceEpoch: fence.epoch });
    await retention.touch(conversationId);
  }
}
