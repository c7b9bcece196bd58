import { IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError, IdempotencyRecordStatus } from "@aws-lambda-powertools/idempotency";
import { BasePersistenceLayer, IdempotencyRecord } from "@aws-lambda-powertools/idempotency/persistence";
import { MongoServerError, type Collection } from "mongodb";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import { type ContentCipher, contentRefused, type FieldRef, type StoredContent } from "../crypto/content-cipher.js";
import { ContentRefusedError } from "../errors.js";
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
  /**
   * The stored result, as JSON text (results may hold keys MongoDB would refuse, such as `$ref`),
   * sealed under the conversation's tenant when content encryption is on.
   */
  data?: StoredContent;
  /**
   * Hash (MD5, as Powertools makes it) of the payload part named by `payloadValidationJmesPath`: the
   * question, or a tool's arguments. Sealed like `data`, since a clear hash of a short text confirms a guess of it.
   */
  validation?: StoredContent;
  /** The conversation the record answers for, stored with it from its first write so deletion and erasure find it (`withTags`). */
  conversationId?: string;
  /** Who made the request or whose turn made the tool call (`withTags`). */
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
  /**
   * What `data` and `validation` are sealed with, under the tenant of the record's conversation.
   * Default: stored clear (`CLEAR_FIELDS`); the app passes the database's cipher.
   */
  cipher?: ContentCipher;
}

/**
 * A stored payload refused (`ContentRefusedError`: clear where ciphertext is expected, or moved from another record
 * or tenant) comes out of Powertools wrapped as a persistence failure: this gives the refusal itself, so it is
 * answered as one (500 `content_refused`); any other error is returned as it is.
 */
export function refusalOrError(error: unknown): unknown {
  return error instanceof Error && error.cause instanceof ContentRefusedError ? error.cause : error;
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
  readonly #cipher: ContentCipher;
  /** The tags of the records whose operation runs in this process (`withTags`), by hashed key. */
  readonly #tags = new Map<string, IdempotencyTags>();

  constructor(options: IdempotencyPersistenceLayerOptions) {
    super();
    this.#collection = options.collection;
    this.#cipher = options.cipher ?? CLEAR_FIELDS;
  }

  /** Creates the TTL index that removes expired records; idempotent, run once at start-up. */
  async setup(): Promise<void> {
    await this.#collection.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, name: "expiresAt_ttl" });
  }

  /** The stored record of `data`'s key (hashed as the configured layer hashes it), or null; no validation, no expiry check. */
  async findByKey(data: { key: string }): Promise<IdempotencyDocument | null> {
    return this.#collection.findOne({ _id: this.getHashedIdempotencyKey(data) });
  }

  /**
   * Runs `work` (the idempotent operation on `data`, configured first) with `tags` known for its
   * record: they are stored in the record from its first write, so deleting the conversation or
   * erasing the caller finds it, and the conversation names the tenant whose key seals the
   * record's payload hash and result, in the write that stores each.
   */
  async withTags<T>(data: { key: string }, tags: IdempotencyTags, work: () => Promise<T>): Promise<T> {
    const id = this.getHashedIdempotencyKey(data);
    this.#tags.set(id, tags);
    try {
      return await work();
    } finally {
      if (this.#tags.get(id) === tags) this.#tags.delete(id);
    }
  }

  /** The stored result of a record as JSON text, opened under its conversation's tenant; undefined when it has none. */
  async openData(doc: IdempotencyDocument): Promise<string | undefined> {
    return this.#open(doc, "data");
  }

  protected async _getRecord(idempotencyKey: string): Promise<IdempotencyRecord> {
    const doc = await this.#collection.findOne({ _id: idempotencyKey });
    if (!doc) throw new IdempotencyItemNotFoundError();
    return this.#toRecord(doc);
  }

  protected async _putRecord(record: IdempotencyRecord): Promise<void> {
    const doc = await this.#toDocument(record);
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
          existing ? await this.#toRecord(existing) : undefined,
        );
      }
    }
  }

  protected async _updateRecord(record: IdempotencyRecord): Promise<void> {
    const id = record.idempotencyKey;
    this.#inProgress.delete(id);
    const set: Partial<IdempotencyDocument> = {
      status: record.getStatus(),
      expiryTimestamp: record.expiryTimestamp ?? 0,
      expiresAt: new Date((record.expiryTimestamp ?? 0) * 1000),
    };
    const sealing = record.responseData !== undefined || this.#validates(record);
    // The tenant is known here: the record was written with its conversation (`withTags`), or, when a repeat of the same
    // key in this process ended its own `withTags` meanwhile (a 409 while this one ran), it is read back from the record.
    const tags =
      !sealing || !this.#cipher.enabled
        ? {}
        : (this.#tags.get(id) ?? (await this.#collection.findOne({ _id: id }, { projection: { conversationId: 1 } })) ?? {});
    if (record.responseData !== undefined) set.data = await this.#seal(id, "data", JSON.stringify(record.responseData), tags);
    if (this.#validates(record)) set.validation = await this.#seal(id, "validation", record.payloadHash, tags);
    await this.#collection.updateOne({ _id: id }, { $set: set });
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

  async #toDocument(record: IdempotencyRecord): Promise<IdempotencyDocument> {
    const expiryTimestamp = record.expiryTimestamp ?? 0;
    const id = record.idempotencyKey;
    const tags = this.#tags.get(id) ?? {};
    const doc: IdempotencyDocument = {
      _id: id,
      status: record.getStatus(),
      expiryTimestamp,
      expiresAt: new Date(expiryTimestamp * 1000),
      ...(tags.conversationId !== undefined && { conversationId: tags.conversationId }),
      ...(tags.owner !== undefined && { owner: tags.owner }),
    };
    if (record.inProgressExpiryTimestamp !== undefined) doc.inProgressExpiryTimestamp = record.inProgressExpiryTimestamp;
    if (this.#validates(record)) doc.validation = await this.#seal(id, "validation", record.payloadHash, tags);
    return doc;
  }

  async #toRecord(doc: IdempotencyDocument): Promise<IdempotencyRecord> {
    const data = await this.#open(doc, "data");
    return new IdempotencyRecord({
      idempotencyKey: doc._id,
      status: doc.status as (typeof IdempotencyRecordStatus)[keyof typeof IdempotencyRecordStatus],
      expiryTimestamp: doc.expiryTimestamp,
      inProgressExpiryTimestamp: doc.inProgressExpiryTimestamp,
      responseData: data === undefined ? undefined : JSON.parse(data),
      payloadHash: await this.#open(doc, "validation"),
    });
  }

  #validates(record: IdempotencyRecord): record is IdempotencyRecord & { payloadHash: string } {
    return this.isPayloadValidationEnabled() && record.payloadHash !== undefined;
  }

  #ref(id: string, field: "data" | "validation"): FieldRef {
    return { collection: this.#collection.collectionName, id, field };
  }

  /** A payload field sealed under the tenant of the record's conversation; clear when encryption is off. */
  async #seal(id: string, field: "data" | "validation", text: string, tags: IdempotencyTags): Promise<StoredContent> {
    if (!this.#cipher.enabled) return text;
    if (tags.conversationId === undefined) throw new Error(`idempotency record ${id} names no conversation whose tenant's key could seal its ${field}`);
    return this.#cipher.sealText(tags.conversationId, this.#ref(id, field), text);
  }

  /** A payload field opened; a clear one where ciphertext is expected, or one moved from another record or tenant, is refused. */
  async #open(doc: IdempotencyDocument, field: "data" | "validation"): Promise<string | undefined> {
    const stored = doc[field];
    if (stored === undefined) return undefined;
    const ref = this.#ref(doc._id, field);
    if (this.#cipher.enabled && doc.conversationId === undefined) throw contentRefused(typeof stored === "string" ? "plaintext" : "undecryptable", ref);
    return this.#cipher.openText(doc.conversationId ?? "", ref, stored);
  }
}
