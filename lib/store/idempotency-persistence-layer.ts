import { IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError, IdempotencyRecordStatus } from "@aws-lambda-powertools/idempotency";
import { BasePersistenceLayer, IdempotencyRecord } from "@aws-lambda-powertools/idempotency/persistence";
import { MongoServerError, type Collection } from "mongodb";
import { isMongoUnavailable } from "./mongo-unavailable.js";
import { retryWhileUnavailable } from "./retry-while-unavailable.js";
import type { Owner } from "../auth/principal.js";

/** One idempotency record as stored in MongoDB. */
export interface IdempotencyDocument {
  /** The hashed idempotency key, prefixed (`<keyPrefix>#<hash>`). */
  _id: string;
  status: string;
  /** Seconds since the epoch, as Powertools counts it. */
  expiryTimestamp: number;
  /** The same instant as a date, for the TTL index that removes expired records. */
  expiresAt: Date;
  /** Milliseconds since the epoch after which an in-progress record may be taken over. */
  inProgressExpiryTimestamp?: number;
  /** The stored result, as JSON text (results may hold keys MongoDB would refuse, such as `$ref`). */
  data?: string;
  /** Hash of the payload part named by `payloadValidationJmesPath`. */
  validation?: string;
  /** The conversation the record answers for, stored beside the hash so deletion and erasure find it (`tag`). */
  conversationId?: string;
  /** Who made the request or whose turn made the tool call (`tag`). */
  owner?: Owner;
}

/** What a record is stored beside its hashed key, so that deleting a conversation or erasing a user finds it. */
export interface IdempotencyTags {
  conversationId?: string;
  owner?: Owner;
}

export interface IdempotencyPersistenceLayerOptions {
  /** The `idempotency` collection; the layer never creates or closes the client. */
  collection: Collection<IdempotencyDocument>;
}

const DUPLICATE_KEY = 11000;
/** Inserts tried when each collides with a record that is gone by the time it is read. */
const MAX_PUT_ATTEMPTS = 3;

/**
 * Powertools idempotency records in MongoDB. Writes are conditional and atomic: an
 * in-progress record is created only if no record exists, or the existing one has
 * expired, or it is in progress past its in-progress expiry (its owner crashed).
 * Otherwise `IdempotencyItemAlreadyExistsError` carries the existing record, so
 * Powertools can return its result or report it in progress without another read.
 *
 * Use one instance per idempotent operation: Powertools configures a layer once.
 */
export class IdempotencyPersistenceLayer extends BasePersistenceLayer {
  readonly #collection: Collection<IdempotencyDocument>;
  /** The in-progress expiry of each record this layer put and has not finished yet: what names it, and no other record, for a late delete. */
  readonly #inProgress = new Map<string, number>();

  constructor(options: IdempotencyPersistenceLayerOptions) {
    super();
    this.#collection = options.collection;
  }

  /** Creates the TTL index that removes expired records; idempotent, run once at start-up. */
  async setup(): Promise<void> {
    await this.#collection.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, name: "expiresAt_ttl" });
  }

  /** The stored record of `data`'s key (hashed as the configured layer hashes it), or null; no validation, no expiry check. */
  async findByKey(data: { key: string }): Promise<IdempotencyDocument | null> {
    return this.#collection.findOne({ _id: this.getHashedIdempotencyKey(data) });
  }

  /** Stores `tags` beside the record of `data`'s key (hashed as `findByKey` hashes it); the record's own fields are left alone. */
  async tag(data: { key: string }, tags: IdempotencyTags): Promise<void> {
    await this.#collection.updateOne({ _id: this.getHashedIdempotencyKey(data) }, { $set: tags });
  }

  protected async _getRecord(idempotencyKey: string): Promise<IdempotencyRecord> {
    const doc = await this.#collection.findOne({ _id: idempotencyKey });
    if (!doc) throw new IdempotencyItemNotFoundError();
    return toRecord(doc);
  }

  protected async _putRecord(record: IdempotencyRecord): Promise<void> {
    const doc = this.#toDocument(record);
    const { _id, ...fields } = doc;
    // A takeover starts afresh: no stale result, no stale in-progress expiry.
    const unset: Record<string, ""> = { data: "" };
    if (doc.inProgressExpiryTimestamp === undefined) unset.inProgressExpiryTimestamp = "";
    // The record we collide with may be deleted (its owner failed) before we read it: then try again.
    if (doc.inProgressExpiryTimestamp !== undefined) this.#inProgress.set(_id, doc.inProgressExpiryTimestamp);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#collection.insertOne(doc);
        return;
      } catch (error) {
        if (!(error instanceof MongoServerError) || error.code !== DUPLICATE_KEY) throw error;
      }
      // A record exists: take it over only if it can no longer answer for this key.
      const nowMs = Date.now();
      const taken = await this.#collection.updateOne(
        {
          _id,
          $or: [
            { expiryTimestamp: { $lt: nowMs / 1000 } },
            {
              status: IdempotencyRecordStatus.INPROGRESS,
              inProgressExpiryTimestamp: { $exists: true, $lt: nowMs },
            },
          ],
        },
        { $set: fields, $unset: unset },
      );
      if (taken.matchedCount === 1) return;
      const existing = await this.#collection.findOne({ _id });
      if (existing || attempt >= MAX_PUT_ATTEMPTS) {
        throw new IdempotencyItemAlreadyExistsError(
          `Failed to put record for already existing idempotency key: ${record.idempotencyKey}`,
          existing ? toRecord(existing) : undefined,
        );
      }
    }
  }

  protected async _updateRecord(record: IdempotencyRecord): Promise<void> {
    this.#inProgress.delete(record.idempotencyKey);
    const set: Partial<IdempotencyDocument> = {
      status: record.getStatus(),
      expiryTimestamp: record.expiryTimestamp ?? 0,
      expiresAt: new Date((record.expiryTimestamp ?? 0) * 1000),
    };
    if (record.responseData !== undefined) set.data = JSON.stringify(record.responseData);
    if (this.isPayloadValidationEnabled() && record.payloadHash !== undefined) set.validation = record.payloadHash;
    await this.#collection.updateOne({ _id: record.idempotencyKey }, { $set: set });
  }

  /**
   * The operation failed: its record goes, so the key may be tried again. When the database is
   * away (the failure was likely its absence), the record is deleted in the background as soon as
   * it answers again, and only that record (its in-progress expiry names it), until that expiry:
   * a retry after the outage is not refused as "in progress" until then. The operation's own error
   * is what its caller then hears.
   */
  protected async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    const key = record.idempotencyKey;
    const inProgressExpiry = this.#inProgress.get(key);
    this.#inProgress.delete(key);
    try {
      await this.#collection.deleteOne({ _id: key });
    } catch (error) {
      if (inProgressExpiry === undefined || !isMongoUnavailable(error)) throw error;
      const filter = { _id: key, status: IdempotencyRecordStatus.INPROGRESS, inProgressExpiryTimestamp: inProgressExpiry };
      void retryWhileUnavailable(async () => void (await this.#collection.deleteOne(filter)), { untilMs: inProgressExpiry });
    }
  }

  #toDocument(record: IdempotencyRecord): IdempotencyDocument {
    const expiryTimestamp = record.expiryTimestamp ?? 0;
    const doc: IdempotencyDocument = {
      _id: record.idempotencyKey,
      status: record.getStatus(),
      expiryTimestamp,
      expiresAt: new Date(expiryTimestamp * 1000),
    };
    if (record.inProgressExpiryTimestamp !== undefined) doc.inProgressExpiryTimestamp = record.inProgressExpiryTimestamp;
    if (this.isPayloadValidationEnabled() && record.payloadHash !== undefined) doc.validation = record.payloadHash;
    return doc;
  }
}

function toRecord(doc: IdempotencyDocument): IdempotencyRecord {
  return new IdempotencyRecord({
    idempotencyKey: doc._id,
    status: doc.status as (typeof IdempotencyRecordStatus)[keyof typeof IdempotencyRecordStatus],
    expiryTimestamp: doc.expiryTimestamp,
    inProgressExpiryTimestamp: doc.inProgressExpiryTimestamp,
    responseData: doc.data === undefined ? undefined : JSON.parse(doc.data),
    payloadHash: doc.validation,
  });
}
