import type { Collection, Db } from "mongodb";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef, StoredContent } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "./collections.js";
import type { WriteFence } from "./write-fence.js";

export type RecordRole = "user" | "assistant";

export interface MessageDocument {
  /** `${turnId}:${role}`: a retried turn rewrites the same record instead of adding another. */
  _id: string;
  conversationId: string;
  turnId: string;
  role: RecordRole;
  /** Encrypted (`FieldCipher`) unless content encryption is off. */
  content: StoredContent;
  createdAt: Date;
  /** The turn's sequence number (`TurnDocument.seq`): a late write still sorts with its own turn. */
  seq?: number;
  /** The turn that replaced this message's turn (edit or regenerate). */
  replacedBy?: string;
  /** The latest attempt that wrote it, so an older attempt that takes its write back leaves a newer one's alone. */
  attempt?: number;
  /** Retention: set on the first write (see RetentionPolicy). */
  expiresAt?: Date;
}

export interface RecordedMessage {
  turnId: string;
  role: RecordRole;
  content: string;
  createdAt: string;
  /** Present when an edited or regenerated turn replaced this one. */
  replacedBy?: string;
}

/**
 * The application-facing record: what users see, user and assistant messages only.
 * Separate from LangGraph's checkpoints, which hold the technical state.
 */
export class MessageStore {
  readonly #messages: Collection<MessageDocument>;
  readonly #cipher: ContentCipher;

  /** @param cipher Default: contents stored clear (`CLEAR_FIELDS`); the database passes its own. */
  constructor(db: Db, cipher: ContentCipher = CLEAR_FIELDS) {
    this.#messages = db.collection<MessageDocument>(COLLECTIONS.messages);
    this.#cipher = cipher;
  }

  async setup(): Promise<void> {
    await this.#messages.createIndex({ conversationId: 1, seq: 1, createdAt: 1, _id: 1 }, { name: "conversation_seq_order" });
    // `questionsSince` (the recall indexer, every turn): the questions after the watermark, not every message of the conversation.
    await this.#messages.createIndex({ conversationId: 1, role: 1, createdAt: 1, _id: 1 }, { name: "conversation_role_time" });
  }

  /** Idempotent per turn and role; written only while `fence` holds. */
  async append(message: { turnId: string; seq: number; role: RecordRole; content: string }, fence: WriteFence, now = new Date()): Promise<void> {
    const _id = `${message.turnId}:${message.role}`;
    const content = await this.#cipher.sealText(fence.conversationId, contentRef(_id), message.content);
    await fence.insertOnce(this.#messages, { _id, ...message, content, conversationId: fence.conversationId, createdAt: now });
  }

  /** Marks the messages of a replaced turn; they stay in the record. */
  async markReplaced(turnId: string, byTurnId: string, fence: WriteFence): Promise<void> {
    await fence.guard(() => this.#messages.updateMany({ conversationId: fence.conversationId, turnId }, { $set: { replacedBy: byTurnId } }));
  }

  /** The question a turn asked, as recorded; undefined when the turn has none. */
  async question(conversationId: string, turnId: string): Promise<string | undefined> {
    const doc = await this.#messages.findOne({ _id: `${turnId}:user`, conversationId });
    return doc ? this.#cipher.openText(conversationId, contentRef(doc._id), doc.content) : undefined;
  }

  /** The conversation's questions recorded at or after `since`, in the order they were written (what the recall index catches up from). */
  async questionsSince(conversationId: string, since?: Date): Promise<(MessageDocument & { content: string })[]> {
    const filter = { conversationId, role: "user" as const, ...(since ? { createdAt: { $gte: since } } : {}) };
    const docs = await this.#messages.find(filter).sort({ createdAt: 1, _id: 1 }).toArray();
    return Promise.all(docs.map(async (d) => ({ ...d, content: await this.#cipher.openText(conversationId, contentRef(d._id), d.content) })));
  }

  /** In turn order (question before answer), whenever each was written. */
  async list(conversationId: string): Promise<RecordedMessage[]> {
    const docs = await this.#messages.find({ conversationId }).sort({ seq: 1, createdAt: 1, _id: -1 }).toArray();
    return Promise.all(
      docs.map(async (d) => ({
        turnId: d.turnId,
        role: d.role,
        content: await this.#cipher.openText(conversationId, contentRef(d._id), d.content),
        createdAt: d.createdAt.toISOString(),
        ...(d.replacedBy ? { replacedBy: d.replacedBy } : {}),
      })),
    );
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await this.#messages.deleteMany({ conversationId });
  }
}

/** Where a message's text is encrypted: its document and the `content` field. */
function contentRef(id: string): FieldRef {
  return { collection: COLLECTIONS.messages, id, field: "content" };
}
