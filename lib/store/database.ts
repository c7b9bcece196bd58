import type { Db, MongoClient } from "mongodb";
import { MongoDBSaver } from "@langchain/langgraph-checkpoint-mongodb";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { ThreadwiseError } from "../errors.js";
import { COLLECTIONS } from "./collections.js";
import { ConversationStore } from "./conversation-store.js";
import { ConversationLease } from "./lease.js";
import { MessageStore } from "./message-store.js";
import { TurnStore } from "./turn-store.js";

export class DatabaseSetupError extends ThreadwiseError {
  override name = "DatabaseSetupError";
}

export interface ThreadwiseDatabaseOptions {
  dbName: string;
  /** Default: {@link DEFAULT_LEASE_TTL_MS} from lease.ts. */
  leaseTtlMs?: number;
}

type DeletableSaver = BaseCheckpointSaver & { deleteThread(threadId: string): Promise<void>; setup(): Promise<unknown[]> };

/**
 * Every store of one database, over a client the caller owns (never closed here).
 * `setup()` creates indexes once at start-up and fails loudly if any cannot be made.
 */
export class ThreadwiseDatabase {
  readonly db: Db;
  readonly conversations: ConversationStore;
  readonly messages: MessageStore;
  readonly turns: TurnStore;
  readonly lease: ConversationLease;
  readonly checkpointer: DeletableSaver;

  constructor(client: MongoClient, options: ThreadwiseDatabaseOptions) {
    this.db = client.db(options.dbName);
    this.conversations = new ConversationStore(this.db);
    this.messages = new MessageStore(this.db);
    this.turns = new TurnStore(this.db);
    this.lease = new ConversationLease(this.conversations.collection, options.leaseTtlMs);
    this.checkpointer = new MongoDBSaver({ client, dbName: options.dbName });
  }

  async setup(): Promise<void> {
    const errors = [...(await this.checkpointer.setup())];
    const results = await Promise.allSettled([this.conversations.setup(), this.messages.setup(), this.turns.setup()]);
    for (const r of results) if (r.status === "rejected") errors.push(r.reason);
    if (errors.length > 0) throw new DatabaseSetupError(`database setup failed (${errors.length} errors)`, { cause: errors[0] });
  }

  /** Removes the conversation from every collection, checkpoints and writes included. */
  async deleteConversation(conversationId: string): Promise<void> {
    await this.checkpointer.deleteThread(conversationId);
    await Promise.all([
      this.messages.deleteByConversation(conversationId),
      this.turns.deleteByConversation(conversationId),
      this.db.collection(COLLECTIONS.artifacts).deleteMany({ conversationId }),
    ]);
    await this.conversations.delete(conversationId);
  }
}
