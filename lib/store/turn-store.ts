import { MongoServerError, type Collection, type Db } from "mongodb";
import type { ModelViewStats } from "../model-view/types.js";
import { COLLECTIONS } from "./collections.js";

export const TURN_STATUSES = ["queued", "running", "completed", "failed"] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

/** One message of a model view as it was sent, in a channel-neutral shape. */
export interface ViewMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  toolCalls?: { id: string; name: string; args: unknown }[];
  toolCallId?: string;
  toolName?: string;
}

export interface Usage {
  /** Every input token, those read from or written to the prompt cache included. */
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Input tokens read from the prompt cache. Absent in records made before prompt caching. */
  cacheReadTokens?: number;
  /** Input tokens written to the prompt cache. Absent in records made before prompt caching. */
  cacheWriteTokens?: number;
  /** What the call (or turn) cost in US dollars, by its model's configured price; absent when the model has none. */
  costUsd?: number;
}

export const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };

/** What one model call was sent and what it cost. */
export interface ModelCallRecord {
  turnId: string;
  index: number;
  startedAt: Date;
  durationMs: number;
  view: ViewMessage[];
  stats: ModelViewStats;
  /** As reported by the model; zero when it reports nothing. */
  usage: Usage;
  /** (estimated − reported) / reported input tokens, the estimate being `stats.estimatedInputTokens`; absent when the model reported none. */
  estimateError?: number;
  toolCalls: string[];
}

export interface TurnProgress {
  step: "queued" | "model" | "tool" | "done";
  tool?: string;
  modelCalls: number;
  at: Date;
}

export interface TurnDocument {
  _id: string;
  conversationId: string;
  status: TurnStatus;
  createdAt: Date;
  updatedAt: Date;
  completedAt?: Date;
  durationMs?: number;
  answer?: string;
  error?: { code: string; message: string };
  usage: Usage;
  toolCalls: number;
  progress: TurnProgress;
  /** A channel turn: when a worker began sending its reply (or failure message); see `claimReply`. */
  replyClaimedAt?: Date;
  /** A channel turn: when its reply was delivered. Set once; a redelivered job then sends nothing. */
  repliedAt?: Date;
}

const DUPLICATE_KEY = 11000;

export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    cacheReadTokens: (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0),
    cacheWriteTokens: (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0),
  };
  if (a.costUsd !== undefined || b.costUsd !== undefined) sum.costUsd = (a.costUsd ?? 0) + (b.costUsd ?? 0);
  return sum;
}

interface ModelCallDocument extends ModelCallRecord {
  /** `${turnId}:${index}`: a resumed turn replaces the record of a call it makes again. */
  _id: string;
  conversationId: string;
}

/** A turn with the record of every model call it made, in order. */
export interface TurnWithCalls extends TurnDocument {
  calls: ModelCallRecord[];
}

/**
 * Turns: status and usage, and for every model call the exact view sent with its token
 * counts. Calls are documents of their own so a long turn never grows one document.
 */
export class TurnStore {
  readonly collection: Collection<TurnDocument>;
  readonly calls: Collection<ModelCallDocument>;

  constructor(db: Db) {
    this.collection = db.collection<TurnDocument>(COLLECTIONS.turns);
    this.calls = db.collection<ModelCallDocument>(COLLECTIONS.modelCalls);
  }

  async setup(): Promise<void> {
    await this.collection.createIndex({ conversationId: 1, createdAt: 1 }, { name: "conversation_turns" });
    await this.calls.createIndex({ turnId: 1, index: 1 }, { name: "turn_calls" });
    await this.calls.createIndex({ conversationId: 1 }, { name: "conversation_calls" });
  }

  /**
   * Creates the turn, or returns the existing one when a retry (or the worker, for a queued turn)
   * names the same id; `created` says which, so a new turn need not look for earlier progress.
   */
  async start(turnId: string, conversationId: string, status: TurnStatus = "running", now = new Date()): Promise<{ turn: TurnDocument; created: boolean }> {
    const fresh: TurnDocument = {
      _id: turnId,
      conversationId,
      status,
      createdAt: now,
      updatedAt: now,
      usage: ZERO_USAGE,
      toolCalls: 0,
      progress: { step: status === "queued" ? "queued" : "model", modelCalls: 0, at: now },
    };
    try {
      await this.collection.insertOne(fresh);
      return { turn: fresh, created: true };
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
    }
    const existing = await this.collection.findOne({ _id: turnId });
    if (!existing) throw new Error(`turn ${turnId} vanished while starting`);
    return { turn: existing, created: false };
  }

  async get(turnId: string): Promise<TurnDocument | null> {
    return this.collection.findOne({ _id: turnId });
  }

  async getWithCalls(turnId: string): Promise<TurnWithCalls | null> {
    const turn = await this.get(turnId);
    if (!turn) return null;
    return { ...turn, calls: await this.listCalls(turnId) };
  }

  async listCalls(turnId: string): Promise<ModelCallRecord[]> {
    const docs = await this.calls.find({ turnId }).sort({ index: 1 }).toArray();
    return docs.map(({ _id, conversationId, ...call }) => call);
  }

  async markRunning(turnId: string, now = new Date()): Promise<void> {
    await this.collection.updateOne({ _id: turnId, status: { $in: ["queued", "running"] } }, { $set: { status: "running", updatedAt: now } });
  }

  async recordModelCall(conversationId: string, call: ModelCallRecord, now = new Date()): Promise<void> {
    await this.calls.replaceOne({ _id: `${call.turnId}:${call.index}` }, { ...call, conversationId }, { upsert: true });
    const progress: TurnProgress = { step: call.toolCalls.length ? "tool" : "done", tool: call.toolCalls[0], modelCalls: call.index + 1, at: now };
    await this.collection.updateOne({ _id: call.turnId }, { $set: { updatedAt: now, progress } });
  }

  async setProgress(turnId: string, progress: Omit<TurnProgress, "at">, now = new Date()): Promise<void> {
    await this.collection.updateOne({ _id: turnId }, { $set: { updatedAt: now, progress: { ...progress, at: now } } });
  }

  async complete(turnId: string, result: { answer: string; usage: Usage; toolCalls: number; durationMs: number }, now = new Date()): Promise<void> {
    await this.collection.updateOne(
      { _id: turnId },
      { $set: { ...result, status: "completed", completedAt: now, updatedAt: now, "progress.step": "done", "progress.at": now } },
    );
  }

  async fail(turnId: string, error: { code: string; message: string }, now = new Date()): Promise<void> {
    await this.collection.updateOne({ _id: turnId }, { $set: { status: "failed", error, updatedAt: now, completedAt: now } });
  }

  /**
   * Claims the sending of a channel turn's reply: true for one caller only, until the reply is
   * marked sent or the claim is released or older than `staleAfterMs` (a worker that died
   * mid-send; its reply may or may not have landed, and a second is better than none).
   */
  async claimReply(turnId: string, staleAfterMs: number, now = new Date()): Promise<boolean> {
    const result = await this.collection.updateOne(
      {
        _id: turnId,
        repliedAt: { $exists: false },
        $or: [{ replyClaimedAt: { $exists: false } }, { replyClaimedAt: { $lt: new Date(now.getTime() - staleAfterMs) } }],
      },
      { $set: { replyClaimedAt: now } },
    );
    return result.modifiedCount === 1;
  }

  /** The claimed reply was delivered: no later delivery of the job sends it again. */
  async markReplied(turnId: string, now = new Date()): Promise<void> {
    await this.collection.updateOne({ _id: turnId }, { $set: { repliedAt: now } });
  }

  /** The claimed reply was not delivered: a retry may claim it at once. */
  async releaseReply(turnId: string): Promise<void> {
    await this.collection.updateOne({ _id: turnId, repliedAt: { $exists: false } }, { $unset: { replyClaimedAt: "" } });
  }

  /** Turns of the conversation left running by an attempt that died; called under the lease, so none is alive. */
  async failInterrupted(conversationId: string, exceptTurnId: string, now = new Date()): Promise<number> {
    const result = await this.collection.updateMany(
      { conversationId, status: "running", _id: { $ne: exceptTurnId } },
      { $set: { status: "failed", error: { code: "interrupted", message: "the turn was interrupted and not retried" }, updatedAt: now, completedAt: now } },
    );
    return result.modifiedCount;
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await this.calls.deleteMany({ conversationId });
    await this.collection.deleteMany({ conversationId });
  }
}
