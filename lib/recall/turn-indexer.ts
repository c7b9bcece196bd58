import type { StructuredLogger } from "../logger.js";
import type { MessageStore } from "../store/message-store.js";
import type { RecallIndexStore, RecallToolOutput, RecallTurnDocument } from "../store/recall-index-store.js";
import type { TurnDocument, TurnStore } from "../store/turn-store.js";
import type { ViewMessage } from "../store/turn-record.js";
import type { WriteFence } from "../store/write-fence.js";
import type { Embedder } from "./embedder.js";
import { termFrequencies } from "./recall-terms.js";

/** Characters of a tool output kept in the index: its start, as the checkpoint keeps an offloaded output's preview. */
export const DEFAULT_RECALL_PREVIEW_CHARS = 400;
/** Characters of a tool call's arguments kept in the index. */
export const DEFAULT_RECALL_ARGS_CHARS = 300;
/** Characters of one chunk of an output past its preview (cut at a line's end when one is near). */
export const DEFAULT_RECALL_CHUNK_CHARS = 1_000;
/**
 * Chunks a turn's outputs keep together, the first outputs first: a row deep in a result is found,
 * and a turn's record stays bounded (about 48 KB of output text past the previews).
 */
export const DEFAULT_RECALL_TURN_CHUNKS = 48;

/** An output past its first `previewChars`, in chunks of about `chunkChars` ending at a line's end when one is in their second half; at most `most`. */
export function outputChunks(content: string, previewChars: number, chunkChars: number, most: number): string[] {
  const chunks: string[] = [];
  let at = previewChars;
  while (at < content.length && chunks.length < most) {
    let end = Math.min(content.length, at + chunkChars);
    if (end < content.length) {
      const lineEnd = content.lastIndexOf("\n", end);
      if (lineEnd > at + chunkChars / 2) end = lineEnd + 1;
    }
    chunks.push(content.slice(at, end));
    at = end;
  }
  return chunks;
}

/**
 * A turn's tool outputs as the index keeps them: each call's arguments (clipped), the start of its
 * output, and the rest in chunks (`outputChunks`), the turn's outputs sharing `DEFAULT_RECALL_TURN_CHUNKS`.
 */
export function recallToolOutputs(outputs: readonly { name: string; args: string; content: string }[]): RecallToolOutput[] {
  let left = DEFAULT_RECALL_TURN_CHUNKS;
  return outputs.map(({ name, args, content }) => {
    const chunks = outputChunks(content, DEFAULT_RECALL_PREVIEW_CHARS, DEFAULT_RECALL_CHUNK_CHARS, left);
    left -= chunks.length;
    const output: RecallToolOutput = { name, args: args.slice(0, DEFAULT_RECALL_ARGS_CHARS), preview: content.slice(0, DEFAULT_RECALL_PREVIEW_CHARS) };
    if (chunks.length > 0) output.chunks = chunks;
    return output;
  });
}

const FINISHED: ReadonlySet<TurnDocument["status"]> = new Set(["completed", "failed"]);

export interface TurnIndexerDeps {
  index: RecallIndexStore;
  messages: MessageStore;
  turns: TurnStore;
  /** Without one, turns are indexed for lexical search only. */
  embedder?: Embedder;
  logger?: StructuredLogger;
}

/** The text of a turn that is searched and embedded: question, answer, and each tool call with its output (the start, then its chunks). */
export function recallText(record: Pick<RecallTurnDocument, "question" | "answer" | "tools">): string {
  const tools = record.tools.map((t) => `${t.name} ${t.args}\n${t.preview}${(t.chunks ?? []).join("")}`);
  return [record.question, record.answer, ...tools].filter((part) => part.length > 0).join("\n");
}

/**
 * Weight of a term of a tool call (its arguments and output) against one of the question or the
 * answer, in a turn's index entry: what the user and the assistant said is what the turn is about,
 * and what a follow-up refers back to; a tool's output also names many things only in passing (every
 * region of a table). A term only an output holds still finds its turn (a row deep in a result).
 */
export const RECALL_TOOL_TERM_WEIGHT = 0.5;

/** A turn's index entry: its terms' frequencies, tool calls' terms weighted by `RECALL_TOOL_TERM_WEIGHT`, and its length, their sum. */
export function recallEntryTerms(record: Pick<RecallTurnDocument, "question" | "answer" | "tools">): { terms: Map<string, number>; length: number } {
  const terms = termFrequencies([record.question, record.answer].join("\n"));
  const tools = termFrequencies(recallText({ question: "", answer: "", tools: record.tools }));
  for (const [term, count] of tools) terms.set(term, (terms.get(term) ?? 0) + RECALL_TOOL_TERM_WEIGHT * count);
  let length = 0;
  for (const count of terms.values()) length += count;
  return { terms, length };
}

/** The tool calls of a turn and each output, whole, from the view its last model call was sent (the active turn is whole there). */
function toolOutputs(view: readonly ViewMessage[]): RecallToolOutput[] {
  const start = view.findLastIndex((m) => m.role === "user");
  const args = new Map<string, string>();
  const outputs: { name: string; args: string; content: string }[] = [];
  for (const message of view.slice(start + 1)) {
    for (const call of message.toolCalls ?? []) args.set(call.id, JSON.stringify(call.args ?? {}));
    if (message.role === "tool") outputs.push({ name: message.toolName ?? "tool", args: args.get(message.toolCallId ?? "") ?? "", content: message.content });
  }
  return recallToolOutputs(outputs);
}

/**
 * Adds a conversation's finished turns to its recall index, from the application record (`messages`,
 * `turns`, `model_calls`), never from checkpoints. It catches up from where the index left off, so a
 * turn whose hook failed, or one that failed without a hook, is indexed with the next one. Turns
 * that left the thread (replaced, superseded) leave the index on each run, before anything is added.
 */
export class TurnIndexer {
  constructor(private readonly deps: TurnIndexerDeps) {}

  /**
   * Indexes every finished turn not yet indexed, in order, under the fence of the turn that just
   * finished; returns how many it added.
   * @throws StaleWriterError when the fence was lost (the conversation deleted or taken over).
   */
  async indexFinishedTurns(conversationId: string, fence: WriteFence): Promise<number> {
    const { index, messages, turns } = this.deps;
    // What the thread forgot, the index forgets: turns replaced by an edit or a regeneration, and superseded ones.
    const left = new Set(await turns.leftThread(conversationId));
    await index.remove(conversationId, [...left], fence);
    const mark = await index.watermark(conversationId);
    const questions = await messages.questionsSince(conversationId, mark?.at);
    const fresh = questions.filter((q) => !mark?.recentTurnIds.has(q.turnId) && !left.has(q.turnId));
    if (fresh.length === 0) return 0;
    const turnById = new Map((await turns.getMany(fresh.map((q) => q.turnId))).map((t) => [t._id, t]));
    let turnNumber = mark?.turnNumber ?? 0;
    let added = 0;
    for (const question of fresh) {
      const turn = turnById.get(question.turnId);
      // A superseded turn has a question and no answer of its own, a replaced one left the thread: nothing to recall.
      if (turn?.status === "superseded" || turn?.replacedBy !== undefined) continue;
      // Numbers follow the order questions were asked: stop at one still running, and go on after it finishes.
      if (!turn || !FINISHED.has(turn.status)) break;
      turnNumber++;
      const lastCall = await turns.lastCall(turn._id);
      const record: RecallTurnDocument = {
        _id: turn._id,
        conversationId,
        turnNumber,
        at: question.createdAt,
        status: turn.status === "completed" ? "completed" : "failed",
        question: question.content,
        answer: turn.status === "completed" ? (turn.answer ?? "") : "",
        tools: lastCall ? toolOutputs(lastCall.view) : [],
      };
      const text = recallText(record);
      const { terms, length } = recallEntryTerms(record);
      await index.add(record, { length, terms, vector: await this.embed(text, conversationId) }, fence);
      added++;
    }
    return added;
  }

  /** Without a vector the turn is still found lexically; the failure is logged, as numbers and names. */
  private async embed(text: string, conversationId: string): Promise<Float32Array | undefined> {
    const { embedder, logger } = this.deps;
    if (!embedder) return undefined;
    try {
      return await embedder.embed(text);
    } catch (error) {
      logger?.warn("recall embedding failed", { conversationId, modelId: embedder.modelId, error: error instanceof Error ? error.name : "Error" });
      return undefined;
    }
  }
}
