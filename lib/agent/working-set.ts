import type { BaseMessage } from "@langchain/core/messages";
import { firstKeptTurn, type ModelViewPolicy } from "../model-view/index.js";
import type { ArchivedTurn } from "../store/turn-archive-store.js";

/**
 * Finished turns before the view's window that gather before they are archived together: the
 * archive step rewrites the thread's `messages` list once, so it comes once every so many turns,
 * not on every turn.
 */
export const DEFAULT_ARCHIVE_BLOCK_TURNS = 6;

/** What archiving moves out of the working set, and what stays. */
export interface ArchivePlan {
  /** The turns to archive, in order, numbered from the conversation's first. */
  turns: ArchivedTurn[];
  /** The messages that stay: the finished turns from the view's oldest kept one on, and the active turn. */
  kept: BaseMessage[];
  /** Finished turns archived once this plan is carried out. */
  archivedTurns: number;
}

/**
 * The thread's working set is what the view can still use: the finished turns from its oldest kept
 * one (`firstKeptTurn`: at most `finishedTurns + historyBlockTurns - 1` of them) and the active turn
 * (from the latest question). Once `blockTurns` finished turns before that have gathered, they are
 * archived. Undefined when nothing is due. Pure: `messages` is not changed.
 *
 * The turn's question must be in `messages` (the graph plans at the start of a turn), so the
 * finished turns are those before the latest question. Messages before the first question go with
 * the first archived turn.
 */
export function archivePlan(
  messages: readonly BaseMessage[],
  archivedTurns: number,
  window: Pick<ModelViewPolicy, "finishedTurns" | "historyBlockTurns">,
  blockTurns = DEFAULT_ARCHIVE_BLOCK_TURNS,
): ArchivePlan | undefined {
  const starts: number[] = [];
  messages.forEach((message, i) => {
    if (message.getType() === "human") starts.push(i);
  });
  const finishedInState = starts.length - 1;
  if (finishedInState <= 0) return undefined;
  const archivable = Math.min(finishedInState, firstKeptTurn(archivedTurns + finishedInState, window) - archivedTurns);
  if (archivable < Math.max(1, blockTurns)) return undefined;
  const turns: ArchivedTurn[] = [];
  for (let k = 0; k < archivable; k++) {
    turns.push({ turnNumber: archivedTurns + k + 1, messages: messages.slice(k === 0 ? 0 : starts[k], starts[k + 1]) });
  }
  return { turns, kept: messages.slice(starts[archivable]), archivedTurns: archivedTurns + archivable };
}
