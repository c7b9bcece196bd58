import { MongoServerError, type Collection, type Db } from "mongodb";
import { NotFoundError } from "../errors.js";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "./collections.js";
import { ZERO_USAGE, type ModelCallRecord, type Usage } from "./turn-record.js";
import type { WriteFence } from "./write-fence.js";
import type { Principal } from "../auth/principal.js";
import { FINAL_TURN_STATUSES, HELD_TURN_STATUSES, type TurnFailureCode, type TurnStatus } from "./turn-lifecycle.js";

export { TURN_STATUSES, type TurnStatus } from "./turn-lifecycle.js";

/** Statuses a turn never leaves (`TURN_TRANSITIONS` in turn-lifecycle.ts). */
const FINAL_STATUSES: readonly TurnStatus[] = FINAL_TURN_STATUSES;

export interface TurnProgress {
  step: "queued" | "model" | "tool" | "approval" | "done";
  tool?: string;
  modelCalls: number;
  at: Date;
}

export interface TurnError {
  code: TurnFailureCode;
  message: string;
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
  error?: TurnError;
  usage: Usage;
  toolCalls: number;
  progress: TurnProgress;
  /** The lease epoch of the attempt running the turn (or that ran it last); other attempts' writes are refused. */
  attempt?: number;
  /**
   * The epoch under which the turn began, its question entering the record and the thread. It
   * orders the record, and the begun turn with the highest is the conversation's latest.
   */
  seq?: number;
  /** The turn this one replaced (an edited or regenerated last question). */
  replaces?: string;
  /** Who asked, from the turn's beginning: the API principal, or the Slack or Teams user. */
  askedBy?: Principal;
  /** The turn that replaced this one; its messages stay in the record, marked. */
  replacedBy?: string;
  /** A channel turn: when a worker began sending its reply (or failure message); see `claimReply`. */
  replyClaimedAt?: Date;
  /** A channel turn: when its reply was delivered. Set once; a redelivered job then sends nothing. */
  repliedAt?: Date;
  /** A channel turn: the segments whose answer an attempt began streaming into the channel (see `claimStream`); no other attempt streams them. */
  streamedSegments?: string[];
  /**
   * The queue job that runs the turn again (an API or channel job), recorded by the attempt that
   * claimed it: recovery resumes a turn whose attempt died through it (docs/recovery.md).
   */
  origin?: Record<string, unknown>;
  /** Whether the attempt running the turn runs a queue delivery, which the queue delivers again if the attempt dies. */
  queueDelivery?: boolean;
  /** A channel turn: when the thread was told the model is busy (see `claimBusyNotice`); told once per turn. */
  busyNoticeAt?: Date;
  /** Retention: set on the first write (see RetentionPolicy). */
  expiresAt?: Date;
}

/** A turn whose attempt this is: writes to it are refused once another attempt claimed it. */
export type ClaimedTurn = TurnDocument & { attempt: number };

const DUPLICATE_KEY = 11000;

interface ModelCallDocument extends ModelCallRecord {
  /** `${turnId}:${index}`: a resumed turn replaces the record of a call it makes again. */
  _id: string;
  conversationId: string;
  /** The attempt that wrote it: an older attempt cannot overwrite a newer one's record. */
  attempt: number;
  expiresAt: Date;
}

/** A turn with the record of every model call it made, in order. */
export interface TurnWithCalls extends TurnDocument {
  calls: ModelCallRecord[];
}

function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/**
 * Turns: status and usage, and for every model call the exact view sent with its token
 * counts. Calls are documents of their own so a long turn never grows one document.
 *
 * The only writer of a turn's status: one method per transition. A claimed turn's writes
 * filter on its attempt (the lease epoch that claimed it), so an attempt that lost the
 * conversation changes nothing and gets `StaleWriterError`.
 */
export class TurnStore {
  readonly #turns: Collection<TurnDocument>;
  readonly #calls: Collection<ModelCallDocument>;
  readonly #cipher: ContentCipher;

  /**
   * @param cipher Default: contents stored clear (`CLEAR_FIELDS`); the database passes its own. `answer`, `origin`
   * and a call's `view` and `sources` are encrypted.
   */
  constructor(db: Db, cipher: ContentCipher = CLEAR_FIELDS) {
    this.#turns = db.collection<TurnDocument>(COLLECTIONS.turns);
    this.#calls = db.collection<ModelCallDocument>(COLLECTIONS.modelCalls);
    this.#cipher = cipher;
  }

  async setup(): Promise<void> {
    await this.#turns.createIndex({ conversationId: 1, createdAt: 1 }, { name: "conversation_turns" });
    await this.#turns.createIndex({ conversationId: 1, seq: 1 }, { name: "conversation_seq" });
    await this.#turns.createIndex({ status: 1, updatedAt: 1 }, { name: "status_updated" });
    // What `leftThread` reads on every turn, bounded by the turns that left rather than by all of the conversation's.
    await this.#turns.createIndex({ conversationId: 1, status: 1 }, { name: "conversation_status" });
    await this.#turns.createIndex(
      { conversationId: 1, replacedBy: 1 },
      { name: "conversation_replaced", partialFilterExpression: { replacedBy: { $exists: true } } },
    );
    await this.#calls.createIndex({ turnId: 1, index: 1 }, { name: "turn_calls" });
    await this.#calls.createIndex({ conversationId: 1 }, { name: "conversation_calls" });
  }

  /**
   * Records a turn handed to the worker, or returns the existing one when a redelivery names
   * the same id; written only while the conversation exists (`fence` from `lease.existing`).
   */
  async enqueue(turnId: string, fence: WriteFence, now = new Date()): Promise<TurnDocument> {
    const fresh = this.fresh(turnId, fence, "queued", now);
    const inserted = await fence.guard(
      () =>
        this.#turns.insertOne(fresh).then(
          () => true,
          (error: unknown) => (isDuplicateKey(error) ? false : Promise.reject(error)),
        ),
      (created) => (created ? this.#turns.deleteOne({ _id: turnId, status: "queued", attempt: { $exists: false } }) : Promise.resolve()),
    );
    if (inserted) return fresh;
    return this.require(turnId);
  }

  /**
   * Takes the turn for the attempt holding `fence` (created when it does not exist yet). Returns
   * it with `claimed: false` when it is final (completed, superseded), which no attempt changes.
   * @throws StaleWriterError when a later attempt has claimed it.
   */
  async claim(
    turnId: string,
    fence: WriteFence,
    fields: { replaces?: string; origin?: Record<string, unknown>; queueDelivery?: boolean } = {},
    now = new Date(),
  ): Promise<{ turn: ClaimedTurn; claimed: true } | { turn: TurnDocument; claimed: false }> {
    const attempt = this.epochOf(fence);
    // A new turn (the usual case) is created claimed; an existing one is claimed if no later attempt has it.
    const origin = fields.origin && (await this.#cipher.sealJson(fence.conversationId, turnRef(turnId, "origin"), fields.origin));
    const fresh = { ...this.fresh(turnId, fence, "running", now), attempt, ...fields, ...(origin && { origin: origin as Record<string, unknown> }) };
    const created = await fence.guard(
      () =>
        this.#turns.insertOne(fresh).then(
          () => true,
          (error: unknown) => (isDuplicateKey(error) ? false : Promise.reject(error)),
        ),
      (inserted) => (inserted ? this.#turns.deleteOne({ _id: turnId, attempt }) : Promise.resolve()),
    );
    if (created) return { turn: { ...fresh, ...(fields.origin && { origin: fields.origin }) }, claimed: true };
    const claimed = await this.#turns.findOneAndUpdate(
      {
        _id: turnId,
        conversationId: fence.conversationId,
        status: { $nin: [...FINAL_STATUSES] },
        $or: [{ attempt: { $exists: false } }, { attempt: { $lt: attempt } }],
      },
      {
        $set: {
          status: "running",
          attempt,
          updatedAt: now,
          "progress.step": "model",
          "progress.at": now,
          ...(origin && { origin: origin as Record<string, unknown> }),
          ...(fields.queueDelivery && { queueDelivery: true }),
        },
        $unset: { error: "", completedAt: "", ...(!fields.queueDelivery && { queueDelivery: "" }) },
      },
      { returnDocument: "after" },
    );
    if (claimed) return { turn: (await this.#open(claimed)) as ClaimedTurn, claimed: true };
    const existing = await this.require(turnId);
    if (existing.conversationId !== fence.conversationId) throw new NotFoundError(`turn ${turnId} not found`);
    if (FINAL_STATUSES.includes(existing.status)) return { turn: existing, claimed: false };
    throw fence.stale();
  }

  /** The turn's question enters the record and the thread under this attempt's epoch; returns that sequence number. */
  /** `askedBy`: the person whose question it is (in a channel conversation, one of the tenant's people). */
  async begin(turn: ClaimedTurn, fence: WriteFence, askedBy: Principal, now = new Date()): Promise<number> {
    const seq = this.epochOf(fence);
    await this.update(turn, fence, { $set: { seq, askedBy, updatedAt: now } });
    return seq;
  }

  /** Whether a turn of the conversation began after the one begun at `seq`. */
  async hasLaterTurn(conversationId: string, seq: number): Promise<boolean> {
    return (await this.#turns.findOne({ conversationId, seq: { $gt: seq } }, { projection: { _id: 1 } })) !== null;
  }

  /** The conversation's latest begun turn, if any. */
  async latest(conversationId: string): Promise<TurnDocument | null> {
    return this.#open(
      await this.#turns
        .find({ conversationId, seq: { $exists: true } })
        .sort({ seq: -1 })
        .limit(1)
        .next(),
    );
  }

  async get(turnId: string): Promise<TurnDocument | null> {
    return this.#open(await this.#turns.findOne({ _id: turnId }));
  }

  /** The turn's status alone, its contents not opened: what a store without the tenants' keys (the webhooks') may read. */
  async statusOf(turnId: string): Promise<TurnStatus | undefined> {
    return (await this.#turns.findOne({ _id: turnId }, { projection: { status: 1 } }))?.status;
  }

  /** Ids of the conversation's turns that left its thread: replaced by an edit or a regeneration, or superseded. */
  async leftThread(conversationId: string): Promise<string[]> {
    const docs = await this.#turns
      .find({ conversationId, $or: [{ replacedBy: { $exists: true } }, { status: "superseded" }] }, { projection: { _id: 1 } })
      .toArray();
    return docs.map((d) => d._id);
  }

  async getMany(turnIds: readonly string[]): Promise<TurnDocument[]> {
    return this.#openAll(await this.#turns.find({ _id: { $in: [...turnIds] } }).toArray());
  }

  async getWithCalls(turnId: string): Promise<TurnWithCalls | null> {
    const turn = await this.get(turnId);
    if (!turn) return null;
    return { ...turn, calls: await this.listCalls(turnId) };
  }

  /** The conversation's turns, newest first, optionally of one status. */
  async list(conversationId: string, options: { status?: TurnStatus; limit: number }): Promise<TurnDocument[]> {
    return this.#openAll(
      await this.#turns
        .find({ conversationId, ...(options.status ? { status: options.status } : {}) })
        .sort({ createdAt: -1, _id: -1 })
        .limit(options.limit)
        .toArray(),
    );
  }

  /**
   * Turns some attempt is working on (`running`), least recently updated first: those whose
   * conversation's lease lapsed were left by an attempt that died, and the recovery sweep takes them.
   */
  async listHeld(limit: number): Promise<TurnDocument[]> {
    return this.#openAll(
      await this.#turns
        .find({ status: { $in: [...HELD_TURN_STATUSES] } })
        .sort({ updatedAt: 1 })
        .limit(limit)
        .toArray(),
    );
  }

  /** Ids of the conversation's `running` turns other than `turnId` claimed by attempts older than `fence`'s, which are dead or fenced out. */
  async heldByOthers(turn: ClaimedTurn, fence: WriteFence): Promise<string[]> {
    const docs = await this.#turns
      .find(
        { conversationId: turn.conversationId, status: "running", _id: { $ne: turn._id }, attempt: { $lt: this.epochOf(fence) } },
        { projection: { _id: 1 } },
      )
      .toArray();
    return docs.map((d) => d._id);
  }

  /** The record of the turn's last model call, if it made one. */
  async lastCall(turnId: string): Promise<ModelCallRecord | null> {
    const doc = await this.#calls.find({ turnId }).sort({ index: -1 }).limit(1).next();
    if (!doc) return null;
    return this.#openCall(doc);
  }

  async listCalls(turnId: string): Promise<ModelCallRecord[]> {
    const docs = await this.#calls.find({ turnId }).sort({ index: 1 }).toArray();
    return Promise.all(docs.map((doc) => this.#openCall(doc)));
  }

  /**
   * Records a model call and the turn's progress. The record is replaced only by the same or a
   * later attempt, and only while the attempt holds the conversation.
   */
  async recordModelCall(turn: ClaimedTurn, call: ModelCallRecord, fence: WriteFence, now = new Date()): Promise<void> {
    const _id = `${call.turnId}:${call.index}`;
    const view = (await this.#cipher.sealJson(
      turn.conversationId,
      { collection: COLLECTIONS.modelCalls, id: _id, field: "view" },
      call.view,
    )) as unknown as ModelCallRecord["view"];
    // What the view drew on (its provenance: tools, roles, users) is sealed beside it, and read only with it.
    const sources =
      call.sources &&
      ((await this.#cipher.sealJson(turn.conversationId, { collection: COLLECTIONS.modelCalls, id: _id, field: "sources" }, call.sources)) as unknown);
    const doc: ModelCallDocument = {
      ...call,
      view,
      ...(sources !== undefined && { sources: sources as ModelCallRecord["sources"] }),
      _id,
      conversationId: turn.conversationId,
      attempt: turn.attempt,
      expiresAt: fence.expiresAt,
    };
    await fence.guard(
      () =>
        this.#calls
          .replaceOne({ _id, $or: [{ attempt: { $lte: turn.attempt } }, { attempt: { $exists: false } }] }, doc, { upsert: true })
          .catch((error: unknown) => Promise.reject(isDuplicateKey(error) ? fence.stale(error) : error)),
      () => this.#calls.deleteOne({ _id, attempt: turn.attempt }),
    );
    const progress: TurnProgress = { step: call.toolCalls.length ? "tool" : "done", tool: call.toolCalls[0], modelCalls: call.index + 1, at: now };
    await this.update(turn, fence, { $set: { updatedAt: now, progress } });
  }

  async setProgress(turn: ClaimedTurn, progress: Omit<TurnProgress, "at">, fence: WriteFence, now = new Date()): Promise<void> {
    await this.update(turn, fence, { $set: { updatedAt: now, progress: { ...progress, at: now } } });
  }

  async complete(
    turn: ClaimedTurn,
    result: { answer: string; usage: Usage; toolCalls: number; durationMs: number },
    fence: WriteFence,
    now = new Date(),
  ): Promise<void> {
    const answer = await this.#cipher.sealText(turn.conversationId, turnRef(turn._id, "answer"), result.answer);
    await this.update(turn, fence, {
      $set: { ...result, answer, status: "completed", completedAt: now, updatedAt: now, "progress.step": "done", "progress.at": now },
    });
  }

  async fail(turn: ClaimedTurn, error: TurnError, fence: WriteFence, now = new Date()): Promise<void> {
    await this.update(turn, fence, { $set: { status: "failed", error, updatedAt: now, completedAt: now } });
  }

  /** The attempt was stopped at its deadline: the turn waits for the worker, which resumes it. */
  async requeue(turn: ClaimedTurn, fence: WriteFence, now = new Date()): Promise<void> {
    await this.update(turn, fence, { $set: { status: "queued", updatedAt: now, "progress.step": "queued", "progress.at": now } });
  }

  /** The turn waits for decisions on its tool calls; the attempt ends, and the next claims it when they are taken. */
  async awaitApproval(turn: ClaimedTurn, tools: string[], fence: WriteFence, now = new Date()): Promise<void> {
    await this.update(turn, fence, {
      $set: { status: "awaiting_approval", updatedAt: now, "progress.step": "approval", "progress.tool": tools.join(", "), "progress.at": now },
    });
  }

  /**
   * Its calls were all decided before the attempt that marked it waiting let go (a decision that found it still running
   * handed nothing on): that attempt takes it on again. Under the attempt's lease, so no other attempt can claim it meanwhile.
   */
  async resumeDecided(turn: ClaimedTurn, fence: WriteFence, now = new Date()): Promise<void> {
    const result = await this.#turns.updateOne(
      { _id: turn._id, attempt: turn.attempt, status: "awaiting_approval" },
      { $set: { status: "running", updatedAt: now, "progress.step": "model", "progress.at": now } },
    );
    if (result.matchedCount !== 1) throw fence.stale();
  }

  /** Ids of the conversation's turns begun before `seq` that still wait for approval (decided or not, not resumed yet). */
  async awaitingBefore(conversationId: string, seq: number): Promise<string[]> {
    const docs = await this.#turns.find({ conversationId, status: "awaiting_approval", seq: { $lt: seq } }, { projection: { _id: 1 } }).toArray();
    return docs.map((d) => d._id);
  }

  /** Turns of the conversation begun before `seq` that still wait for approval: a newer question ends them unanswered. */
  async supersedeAwaiting(conversationId: string, seq: number, now = new Date()): Promise<number> {
    const result = await this.#turns.updateMany(
      { conversationId, status: "awaiting_approval", seq: { $lt: seq } },
      { $set: { status: "superseded", updatedAt: now, completedAt: now, "progress.step": "done", "progress.at": now } },
    );
    return result.modifiedCount;
  }

  /** The turn is no longer its conversation's latest: it ends without an answer. */
  async supersede(turn: ClaimedTurn, fence: WriteFence, now = new Date()): Promise<void> {
    await this.update(turn, fence, {
      $set: { status: "superseded", updatedAt: now, completedAt: now, "progress.step": "done", "progress.at": now },
    });
  }

  /** A replaced turn stays in the record, marked with the turn that replaced it. */
  async markReplaced(turnId: string, by: ClaimedTurn, fence: WriteFence, now = new Date()): Promise<void> {
    await fence.guard(() => this.#turns.updateOne({ _id: turnId, conversationId: by.conversationId }, { $set: { replacedBy: by._id, updatedAt: now } }));
  }

  /** A queued turn refused before any attempt ran it (a channel message over the size limit). */
  async reject(turnId: string, error: TurnError, now = new Date()): Promise<void> {
    await this.#turns.updateOne(
      { _id: turnId, status: "queued", attempt: { $exists: false } },
      { $set: { status: "failed", error, updatedAt: now, completedAt: now } },
    );
  }

  /**
   * Turns of the conversation left running by attempts older than `fence`'s, which are dead or
   * fenced out: they are failed as interrupted. A retry decides whether they resume.
   */
  async interruptOthers(turn: ClaimedTurn, fence: WriteFence, now = new Date()): Promise<number> {
    const result = await this.#turns.updateMany(
      { conversationId: turn.conversationId, status: "running", _id: { $ne: turn._id }, attempt: { $lt: this.epochOf(fence) } },
      { $set: { status: "failed", error: { code: "interrupted", message: "the turn was interrupted and not retried" }, updatedAt: now, completedAt: now } },
    );
    return result.modifiedCount;
  }

  /**
   * Claims the sending of a channel turn's reply: true for one caller only, until the reply is
   * marked sent or the claim is released or older than `staleAfterMs` (a worker that died
   * mid-send; its reply may or may not have landed, and a second is better than none).
   */
  async claimReply(turnId: string, staleAfterMs: number, now = new Date()): Promise<boolean> {
    const result = await this.#turns.updateOne(
      {
        _id: turnId,
        repliedAt: { $exists: false },
        $or: [{ replyClaimedAt: { $exists: false } }, { replyClaimedAt: { $lt: new Date(now.getTime() - staleAfterMs) } }],
      },
      { $set: { replyClaimedAt: now } },
    );
    return result.modifiedCount === 1;
  }

  /**
   * Claims streaming a channel turn's answer: true once per turn and `segment` (the resume key of
   * a turn continued after approvals; none for its start), ever. An attempt that dies mid-stream
   * leaves the stream to its fate; the redelivery answers in one message instead.
   */
  async claimStream(turnId: string, segment = ""): Promise<boolean> {
    const result = await this.#turns.updateOne({ _id: turnId, streamedSegments: { $nin: [segment] } }, { $addToSet: { streamedSegments: segment } });
    return result.modifiedCount === 1;
  }

  /** True for the one caller that may tell the thread its model is busy: one notice per turn, whatever the attempts and receives. */
  async claimBusyNotice(turnId: string, now = new Date()): Promise<boolean> {
    const result = await this.#turns.updateOne({ _id: turnId, busyNoticeAt: { $exists: false } }, { $set: { busyNoticeAt: now } });
    return result.modifiedCount === 1;
  }

  /** The claimed reply was delivered: no later delivery of the job sends it again. */
  async markReplied(turnId: string, now = new Date()): Promise<void> {
    await this.#turns.updateOne({ _id: turnId }, { $set: { repliedAt: now } });
  }

  /** The claimed reply was not delivered: a retry may claim it at once. */
  async releaseReply(turnId: string): Promise<void> {
    await this.#turns.updateOne({ _id: turnId, repliedAt: { $exists: false } }, { $unset: { replyClaimedAt: "" } });
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await this.#calls.deleteMany({ conversationId });
    await this.#turns.deleteMany({ conversationId });
  }

  private fresh(turnId: string, fence: WriteFence, status: "queued" | "running", now: Date): TurnDocument {
    return {
      _id: turnId,
      conversationId: fence.conversationId,
      status,
      createdAt: now,
      updatedAt: now,
      usage: ZERO_USAGE,
      toolCalls: 0,
      progress: { step: status === "queued" ? "queued" : "model", modelCalls: 0, at: now },
      expiresAt: fence.expiresAt,
    };
  }

  private async require(turnId: string): Promise<TurnDocument> {
    const existing = await this.get(turnId);
    if (!existing) throw new NotFoundError(`turn ${turnId} not found`);
    return existing;
  }

  /** The turn as stored, its answer and origin decrypted. */
  async #open<T extends TurnDocument | null>(doc: T): Promise<T> {
    if (!doc) return doc;
    const { conversationId, _id } = doc;
    const answer = doc.answer === undefined ? undefined : await this.#cipher.openText(conversationId, turnRef(_id, "answer"), doc.answer);
    const origin =
      doc.origin === undefined ? undefined : await this.#cipher.openJson<Record<string, unknown>>(conversationId, turnRef(_id, "origin"), doc.origin);
    return { ...doc, ...(answer !== undefined && { answer }), ...(origin !== undefined && { origin }) };
  }

  #openAll(docs: TurnDocument[]): Promise<TurnDocument[]> {
    return Promise.all(docs.map((doc) => this.#open(doc)));
  }

  async #openCall({ _id, conversationId, attempt, expiresAt, ...call }: ModelCallDocument): Promise<ModelCallRecord> {
    const view = await this.#cipher.openJson<ModelCallRecord["view"]>(
      conversationId,
      { collection: COLLECTIONS.modelCalls, id: _id, field: "view" },
      call.view,
    );
    const sources =
      call.sources === undefined
        ? undefined
        : await this.#cipher.openJson<ModelCallRecord["sources"]>(
            conversationId,
            { collection: COLLECTIONS.modelCalls, id: _id, field: "sources" },
            call.sources,
          );
    return { ...call, view, ...(sources !== undefined && { sources }) };
  }

  /** Writes to a claimed turn while its attempt is still the one running it. */
  private async update(turn: ClaimedTurn, fence: WriteFence, update: Record<string, unknown>): Promise<void> {
    const result = await this.#turns.updateOne({ _id: turn._id, attempt: turn.attempt, status: "running" }, update);
    if (result.matchedCount !== 1) throw fence.stale();
  }

  private epochOf(fence: WriteFence): number {
    if (fence.epoch === undefined) throw new TypeError("a turn is claimed under a lease's fence, not an existence fence");
    return fence.epoch;
  }
}

/** Where a turn's field is encrypted: its document in `turns` and the field. */
function turnRef(id: string, field: "answer" | "origin"): FieldRef {
  return { collection: COLLECTIONS.turns, id, field };
}
