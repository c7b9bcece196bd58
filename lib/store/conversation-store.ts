import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { NotFoundError, ValidationError } from "../errors.js";
import type { Caller } from "../tools/tool.js";
import { COLLECTIONS } from "./collections.js";

/** Page size of `GET /v1/conversations` when the caller gives none. */
export const DEFAULT_PAGE_SIZE = 20;
/** Largest page a caller may ask for. */
export const MAX_PAGE_SIZE = 100;

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
  ownerId: string;
  tenantId: string | null;
  title: string | null;
  channel: ChannelBinding;
  createdAt: Date;
  updatedAt: Date;
  lease?: Lease | null;
  /** Raised by every lease acquisition (and by deletion): the fencing token of the turn holding the lease. */
  leaseEpoch?: number;
  /** When the conversation expires unless it is active again (see RetentionPolicy). */
  expiresAt?: Date;
}

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

export function toSummary(doc: ConversationDocument): ConversationSummary {
  return {
    conversationId: doc._id,
    title: doc.title,
    channel: doc.channel.channel,
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}

/** The caller may see a conversation only when owner and tenant both match. */
function ownedBy(caller: Caller) {
  return { ownerId: caller.userId, tenantId: caller.tenantId ?? null };
}

/** Conversations: owner, tenant, channel binding, title, timestamps and the turn lease. */
export class ConversationStore {
  readonly collection: Collection<ConversationDocument>;

  /** `retentionMs`: a new conversation expires after this long unless it is used. */
  constructor(
    db: Db,
    private readonly retentionMs?: number,
  ) {
    this.collection = db.collection<ConversationDocument>(COLLECTIONS.conversations);
  }

  async setup(): Promise<void> {
    await this.collection.createIndex({ ownerId: 1, tenantId: 1, updatedAt: -1, _id: -1 }, { name: "owner_recent" });
    await this.collection.createIndex(
      { "channel.channel": 1, "channel.key": 1 },
      { name: "channel_key", unique: true, partialFilterExpression: { "channel.key": { $type: "string" } } },
    );
  }

  async create(caller: Caller, channel: ChannelBinding = { channel: "api" }, now = new Date()): Promise<ConversationDocument> {
    const doc: ConversationDocument = {
      _id: randomUUID(),
      ...ownedBy(caller),
      title: null,
      channel,
      createdAt: now,
      updatedAt: now,
      lease: null,
    };
    if (this.retentionMs) doc.expiresAt = new Date(now.getTime() + this.retentionMs);
    await this.collection.insertOne(doc);
    return doc;
  }

  /** The conversation bound to a channel key, created on first use (Slack thread, Teams conversation). */
  async findOrCreateByChannelKey(caller: Caller, channel: Required<ChannelBinding>, now = new Date()): Promise<ConversationDocument> {
    const found = await this.collection.findOne({ "channel.channel": channel.channel, "channel.key": channel.key });
    if (found) return found;
    try {
      return await this.create(caller, channel, now);
    } catch (error) {
      const raced = await this.collection.findOne({ "channel.channel": channel.channel, "channel.key": channel.key });
      if (raced) return raced;
      throw error;
    }
  }

  /** Throws NotFoundError for unknown ids and for conversations the caller does not own. */
  async getOwned(conversationId: string, caller: Caller): Promise<ConversationDocument> {
    const doc = await this.collection.findOne({ _id: conversationId, ...ownedBy(caller) });
    if (!doc) throw new NotFoundError(`conversation ${conversationId} not found`);
    return doc;
  }

  async get(conversationId: string): Promise<ConversationDocument | null> {
    return this.collection.findOne({ _id: conversationId });
  }

  /** Newest first; the cursor is opaque to callers. */
  async list(caller: Caller, options: { limit?: number; cursor?: string } = {}): Promise<ConversationPage> {
    const limit = Math.min(options.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
    const filter: Record<string, unknown> = { ...ownedBy(caller) };
    if (options.cursor) {
      const { updatedAt, id } = decodeCursor(options.cursor);
      filter.$or = [{ updatedAt: { $lt: updatedAt } }, { updatedAt, _id: { $lt: id } }];
    }
    const docs = await this.collection.find(filter).sort({ updatedAt: -1, _id: -1 }).limit(limit + 1).toArray();
    const page = docs.slice(0, limit);
    const last = page[page.length - 1];
    return {
      conversations: page.map(toSummary),
      nextCursor: docs.length > limit && last ? encodeCursor(last.updatedAt, last._id) : null,
    };
  }

  async touch(conversationId: string, fields: { title?: string } = {}, now = new Date()): Promise<void> {
    const set: Record<string, unknown> = { updatedAt: now };
    await this.collection.updateOne({ _id: conversationId }, { $set: set });
    if (fields.title) await this.collection.updateOne({ _id: conversationId, title: null }, { $set: { title: fields.title } });
  }

  async delete(conversationId: string): Promise<void> {
    await this.collection.deleteOne({ _id: conversationId });
  }
}

function encodeCursor(updatedAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([updatedAt.getTime(), id])).toString("base64url");
}

function decodeCursor(cursor: string): { updatedAt: Date; id: string } {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown];
    if (typeof ms !== "number" || typeof id !== "string") throw new Error("shape");
    return { updatedAt: new Date(ms), id };
  } catch (error) {
    throw new ValidationError("invalid cursor", [{ path: "cursor", message: "not a cursor from a previous page" }], { cause: error });
  }
}
