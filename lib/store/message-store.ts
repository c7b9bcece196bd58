import type { Collection, Db } from "mongodb";
import { COLLECTIONS } from "./collections.js";

export type RecordRole = "user" | "assistant";

export interface MessageDocument {
  /** `${turnId}:${role}`: a retried turn rewrites the same record instead of adding another. */
  _id: string;
  conversationId: string;
  turnId: string;
  role: RecordRole;
  content: string;
  createdAt: Date;
}

export interface RecordedMessage {
  turnId: string;
  role: RecordRole;
  content: string;
  createdAt: string;
}

/**
 * The application-facing record: what users see, user and assistant messages only.
 * Separate from LangGraph's checkpoints, which hold the technical state.
 */
export class MessageStore {
  readonly collection: Collection<MessageDocument>;

  constructor(db: Db) {
    this.collection = db.collection<MessageDocument>(COLLECTIONS.messages);
  }

  async setup(): Promise<void> {
    await this.collection.createIndex({ conversationId: 1, createdAt: 1, _id: 1 }, { name: "conversation_order" });
  }

  /** Idempotent per turn and role. */
  async append(message: { conversationId: string; turnId: string; role: RecordRole; content: string }, now = new Date()): Promise<void> {
    await this.collection.updateOne(
      { _id: `${message.turnId}:${message.role}` },
      { $setOnInsert: { ...message, createdAt: now } },
      { upsert: true },
    );
  }

  async list(conversationId: string): Promise<RecordedMessage[]> {
    const docs = await this.collection.find({ conversationId }).sort({ createdAt: 1, _id: -1 }).toArray();
    return docs.map((d) => ({ turnId: d.turnId, role: d.role, content: d.content, createdAt: d.createdAt.toISOString() }));
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await this.collection.deleteMany({ conversationId });
  }
}
