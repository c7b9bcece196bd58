import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { requireAccess, type AccessOptions, type ConversationNeed } from "../auth/conversation-access.js";
import type { Caller, Owner, Principal } from "../auth/principal.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "./collections.js";

/** Page size of `GET /v1/conversations` when the caller gives none. */
export const DEFAULT_PAGE_SIZE = 20;
/** Largest page a caller may ask for. */
export const MAX_PAGE_SIZE = 100;
/** Most keys a conversation's metadata holds (the Agent Protocol's thread metadata), after any write. */
export const MAX_METADATA_KEYS = 32;
/** Times a metadata merge is tried when another write changed the metadata between its read and its write. */
export const METADATA_MERGE_ATTEMPTS = 5;

/** `ValidationError` (400) when metadata of `count` keys is over {@link MAX_METADATA_KEYS}. */
function checkMetadataKeys(count: number): void {
  if (count > MAX_METADATA_KEYS) {
    throw new ValidationError(`thread metadata holds at most ${MAX_METADATA_KEYS} keys; this write would leave ${count}, and nothing was written`, [
      { path: "metadata", message: `at most ${MAX_METADATA_KEYS} keys` },
    ]);
  }
}

/**
 * How long a deleted conversation's channel thread refuses jobs received before the deletion: the
 * longest a queued job can come back (the dead-letter queue keeps one 14 days, and may redrive it).
 */
export const DELETED_CHANNEL_KEY_MS = 14 * 86_400_000;

export type ChannelName = "api" | "slack" | "teams";

export interface ChannelBinding {
  channel: ChannelName;
  /** The channel's own key for this conversation (Slack team/channel/thread, Teams conversation id). */
  key?: string;
}

export interface Lease {
  holder: string;
  expiresAt: Date;
}

export interface ConversationDocument {
  _id: string;
  /** An API principal, a Slack workspace or Teams tenant (its channel threads), or a Teams user without a tenant. */
  owner: Owner;
  title: string | null;
  channel: ChannelBinding;
  createdAt: Date;
  updatedAt: Date;
  lease?: Lease | null;
  /** Raised by every lease acquisition (and by deletion): the fencing token of the turn holding the lease. */
  leaseEpoch?: number;
  /** When the conversation expires unless it is active again (see RetentionPolicy). */
  expiresAt?: Date;
  /** When RetentionPolicy last pushed the whole conversation's expiry forward. */
  retentionRenewedAt?: Date;
  /** Flat key-value metadata a client set (the Agent Protocol's thread metadata); searchable by equality. */
  metadata?: ConversationMetadata;
  /** API users of the owner's tenant it was shared with (docs/api.md, "Members"); they read it and send turns as themselves. */
  members?: ConversationMember[];
  /** Raised by every change of `members`: a change applies only to the list it read. */
  membersVersion?: number;
}

/** A member of an API conversation: the principal, and who added it when. */
export interface ConversationMember extends Principal {
  addedAt: Date;
  addedBy: Principal;
}

/** Metadata values: flat, so a search is an equality per key. */
export type ConversationMetadata = Record<string, string | number | boolean | null>;

/** A channel thread whose conversation was deleted: a job received before `deletedAt` belonged to it. */
interface DeletedChannelKey {
  /** The channel and its key, as JSON. */
  _id: string;
  deletedAt: Date;
  expiresAt: Date;
}

const channelKeyId = (channel: Required<ChannelBinding>) => JSON.stringify([channel.channel, channel.key]);

export interface ConversationSummary {
  conversationId: string;
  title: string | null;
  channel: ChannelName;
  createdAt: string;
  updatedAt: string;
}

export interface ConversationPage {
  conversations: ConversationSummary[];
  nextCursor: string | null;
}

const titleRef = (conversationId: string): FieldRef => ({ collection: COLLECTIONS.conversations, id: conversationId, field: "title" });

/** The summary of a conversation whose title is clear (`ConversationStore.summaryOf` decrypts it first). */
export function toSummary(doc: ConversationDocument): ConversationSummary {
  return {
    conversationId: doc._id,
    title: doc.title,
    channel: doc.channel.channel,
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}

/**
 * A conversation is reached only by its owner: issuer kind, tenant and subject all equal, so an
 * API principal never matches a channel owner whatever its subject says.
 */
function ownedBy(owner: Owner) {
  return { "owner.issuer": owner.issuer, "owner.tenant": owner.tenant, "owner.subject": owner.subject };
}

/** A member entry of this principal (issuer, tenant and subject all equal). */
export const memberIs = (principal: Principal) => ({ issuer: principal.issuer, tenant: principal.tenant, subject: principal.subject });

/** Conversations a principal owns or is a member of: what its lists and searches show. */
function reachableBy(principal: Owner) {
  if (principal.subject === null) return ownedBy(principal);
  return { $or: [ownedBy(principal), { members: { $elemMatch: memberIs(principal as Principal) } }] };
}

/** Conversations: owner, tenant, channel binding, title, timestamps and the turn lease. */
export class ConversationStore {
  readonly collection: Collection<ConversationDocument>;
  readonly #deletedKeys: Collection<DeletedChannelKey>;

  /** `retentionMs`: a new conversation expires after this long unless it is used. */
  readonly #cipher: ContentCipher;

  /** @param cipher Default: titles stored clear (`CLEAR_FIELDS`); the database passes its own. A conversation's `title` is encrypted. */
  constructor(
    db: Db,
    private readonly retentionMs?: number,
    cipher: ContentCipher = CLEAR_FIELDS,
  ) {
    this.#cipher = cipher;
    this.collection = db.collection<ConversationDocument>(COLLECTIONS.conversations);
    this.#deletedKeys = db.collection<DeletedChannelKey>(COLLECTIONS.deletedChannelKeys);
  }

  async setup(): Promise<void> {
    await this.collection.createIndex({ "owner.issuer": 1, "owner.tenant": 1, "owner.subject": 1, updatedAt: -1, _id: -1 }, { name: "principal_recent" });
    await this.collection.createIndex(
      { "members.issuer": 1, "members.tenant": 1, "members.subject": 1, updatedAt: -1, _id: -1 },
      { name: "member_recent", partialFilterExpression: { members: { $exists: true } } },
    );
    await this.collection.createIndex(
      { "channel.channel": 1, "channel.key": 1 },
      { name: "channel_key", unique: true, partialFilterExpression: { "channel.key": { $type: "string" } } },
    );
    await this.#deletedKeys.createIndex({ expiresAt: 1 }, { name: "deleted_key_ttl", expireAfterSeconds: 0 });
  }

  /**
   * `options.id` names the new conversation (an Agent Protocol client may); a taken id is a duplicate
   * key error from the driver, which the caller turns into its answer. Metadata of more than
   * {@link MAX_METADATA_KEYS} keys is a `ValidationError` and nothing is stored.
   */
  async create(
    owner: Owner,
    channel: ChannelBinding = { channel: "api" },
    now = new Date(),
    options: { id?: string; metadata?: ConversationMetadata } = {},
  ): Promise<ConversationDocument> {
    checkMetadataKeys(Object.keys(options.metadata ?? {}).length);
    const doc: ConversationDocument = {
      _id: options.id ?? randomUUID(),
      owner,
      title: null,
      channel,
      createdAt: now,
      updatedAt: now,
      lease: null,
      ...(options.metadata && Object.keys(options.metadata).length > 0 && { metadata: options.metadata }),
    };
    if (this.retentionMs) doc.expiresAt = new Date(now.getTime() + this.retentionMs);
    await this.collection.insertOne(doc);
    return doc;
  }

  /**
   * The conversation bound to a channel key, created on first use (Slack thread, Teams conversation).
   * A message `receivedAt` before the thread's conversation was deleted belonged to it: NotFoundError,
   * so a redelivered or long-queued job neither brings its question back nor puts it in a newer conversation.
   */
  async findOrCreateByChannelKey(owner: Owner, channel: Required<ChannelBinding>, receivedAt: Date, now = new Date()): Promise<ConversationDocument> {
    const found = await this.collection.findOne({ "channel.channel": channel.channel, "channel.key": channel.key });
    // A thread's conversation made before the message came was made after any deletion the message could predate.
    if (found && found.createdAt <= receivedAt) return found;
    const deleted = await this.#deletedKeys.findOne({ _id: channelKeyId(channel) });
    if (deleted && receivedAt < deleted.deletedAt) throw new NotFoundError("the conversation of this channel thread was deleted after the message came");
    if (found) return found;
    try {
      return await this.create(owner, channel, now);
    } catch (error) {
      const raced = await this.collection.findOne({ "channel.channel": channel.channel, "channel.key": channel.key });
      if (raced) return raced;
      throw error;
    }
  }

  /**
   * The conversation when the caller may do what `need` names (`lib/auth/conversation-access.ts`,
   * the one check); NotFoundError for unknown ids and for conversations the caller may not see,
   * ForbiddenError for what it sees but may not do. `options`: the admin roles where a tenant admin
   * may act, the channel a signed channel request came through.
   */
  async getFor(conversationId: string, caller: Caller, need: ConversationNeed, options: AccessOptions = {}): Promise<ConversationDocument> {
    return requireAccess(await this.get(conversationId), conversationId, caller, need, options);
  }

  async get(conversationId: string): Promise<ConversationDocument | null> {
    return this.collection.findOne({ _id: conversationId });
  }

  /** The conversations `owner` owns or is a member of, newest first; the cursor is opaque to callers. */
  async list(owner: Owner, options: { limit?: number; cursor?: string } = {}): Promise<ConversationPage> {
    const limit = Math.min(options.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
    const clauses: Record<string, unknown>[] = [reachableBy(owner)];
    if (options.cursor) {
      const { updatedAt, id } = decodeCursor(options.cursor);
      clauses.push({ $or: [{ updatedAt: { $lt: updatedAt } }, { updatedAt, _id: { $lt: id } }] });
    }
    const filter = clauses.length === 1 ? clauses[0] : { $and: clauses };
    const docs = await this.collection
      .find(filter)
      .sort({ updatedAt: -1, _id: -1 })
      .limit(limit + 1)
      .toArray();
    const page = docs.slice(0, limit);
    const last = page[page.length - 1];
    return {
      conversations: await Promise.all(page.map((doc) => this.summaryOf(doc))),
      nextCursor: docs.length > limit && last ? encodeCursor(last.updatedAt, last._id) : null,
    };
  }

  /**
   * The conversations `owner` owns or is a member of, newest first, `offset` into them: those among
   * `ids` when given, whose metadata holds every key of `metadata` with the same value.
   */
  async search(owner: Owner, options: { ids?: string[]; metadata?: ConversationMetadata; limit: number; offset: number }): Promise<ConversationDocument[]> {
    const filter: Record<string, unknown> = { ...reachableBy(owner) };
    if (options.ids) filter._id = { $in: options.ids };
    for (const [key, value] of Object.entries(options.metadata ?? {})) filter[`metadata.${key}`] = value;
    return this.collection.find(filter).sort({ updatedAt: -1, _id: -1 }).skip(options.offset).limit(Math.min(options.limit, MAX_PAGE_SIZE)).toArray();
  }

  /**
   * Merges keys into an owned conversation's metadata (a null value is kept as null); NotFoundError
   * otherwise. A merge that would leave more than {@link MAX_METADATA_KEYS} keys is a
   * `ValidationError` and writes nothing. The write applies only to the metadata it read (checked
   * by equality), so concurrent merges cannot pass the cap together: one that lost the race reads
   * again, and after {@link METADATA_MERGE_ATTEMPTS} tries is a `ConflictError`.
   */
  async mergeMetadata(conversationId: string, owner: Owner, metadata: ConversationMetadata, now = new Date()): Promise<ConversationDocument> {
    const set: Record<string, unknown> = { updatedAt: now };
    for (const [key, value] of Object.entries(metadata)) set[`metadata.${key}`] = value;
    for (let attempt = 0; attempt < METADATA_MERGE_ATTEMPTS; attempt++) {
      const current = await this.collection.findOne({ _id: conversationId, ...ownedBy(owner) }, { projection: { metadata: 1 } });
      if (!current) throw new NotFoundError(`conversation ${conversationId} not found`);
      checkMetadataKeys(new Set([...Object.keys(current.metadata ?? {}), ...Object.keys(metadata)]).size);
      const unchanged = current.metadata === undefined ? { metadata: { $exists: false } } : { metadata: current.metadata };
      const doc = await this.collection.findOneAndUpdate({ _id: conversationId, ...ownedBy(owner), ...unchanged }, { $set: set }, { returnDocument: "after" });
      if (doc) return doc;
    }
    throw new ConflictError(`the metadata of conversation ${conversationId} kept changing while this merge was written; try again`, 1);
  }

  async touch(conversationId: string, fields: { title?: string } = {}, now = new Date()): Promise<void> {
    const set: Record<string, unknown> = { updatedAt: now };
    await this.collection.updateOne({ _id: conversationId }, { $set: set });
    if (fields.title) {
      const title = await this.#cipher.sealText(conversationId, titleRef(conversationId), fields.title);
      await this.collection.updateOne({ _id: conversationId, title: null }, { $set: { title: title as string } });
    }
  }

  /** The conversation as the API lists it, its title decrypted. */
  async summaryOf(doc: ConversationDocument): Promise<ConversationSummary> {
    const title = doc.title === null ? null : await this.#cipher.openText(doc._id, titleRef(doc._id), doc.title);
    return toSummary({ ...doc, title });
  }

  /** Deletes the conversation document; a channel thread's key is remembered first (see `findOrCreateByChannelKey`). */
  async delete(conversationId: string, now = new Date()): Promise<void> {
    const doc = await this.collection.findOne({ _id: conversationId }, { projection: { channel: 1 } });
    const { channel, key } = doc?.channel ?? {};
    if (channel && key !== undefined) {
      const expiresAt = new Date(now.getTime() + DELETED_CHANNEL_KEY_MS);
      await this.#deletedKeys.updateOne({ _id: channelKeyId({ channel, key }) }, { $set: { deletedAt: now, expiresAt } }, { upsert: true });
    }
    await this.collection.deleteOne({ _id: conversationId });
  }
}

function encodeCursor(updatedAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([updatedAt.getTime(), id])).toString("base64url");
}

function decodeCursor(cursor: string): { updatedAt: Date; id: string } {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown];
    // A time no page can have (not whole milliseconds, past Date's range) would match nothing, not be refused.
    if (typeof ms !== "number" || !Number.isSafeInteger(ms) || Number.isNaN(new Date(ms).getTime()) || typeof id !== "string") throw new Error("shape");
    return { updatedAt: new Date(ms), id };
  } catch (error) {
    throw new ValidationError("invalid cursor", [{ path: "cursor", message: "not a cursor from a previous page" }], { cause: error });
  }
}
