import type { Collection, Db, MongoClient } from "mongodb";
import type { Clock } from "../clock.js";
import { fieldValue } from "../crypto/content-cipher.js";
import { DEFAULT_DATA_KEY_MAX_AGE_MS, FieldCipher } from "../crypto/field-cipher.js";
import { type ShredReceipt, type TenantKeys, tenantKey } from "../crypto/tenant-keys.js";
import { type TermKeyDocument, TenantTermKeys } from "../crypto/tenant-term-keys.js";
import type { IssuerKind } from "../auth/principal.js";
import { NotFoundError, ThreadwiseError } from "../errors.js";
import { ApprovalStore } from "./approval-store.js";
import { ArtifactStore } from "./artifact-store.js";
import { CheckpointResealWalker } from "./checkpoint/checkpoint-reseal-walker.js";
import { CollectionResealWalker } from "./collection-reseal-walker.js";
import { ContentResealer, type ResealJobDocument, type ResealWalker } from "./content-resealer.js";
import { COLLECTIONS } from "./collections.js";
import { IdempotencyPersistenceLayer, type IdempotencyDocument } from "./idempotency-persistence-layer.js";
import { ConversationStore } from "./conversation-store.js";
import { ConversationLease } from "./lease.js";
import { MessageStore } from "./message-store.js";
import { RecallIndexStore } from "./recall-index-store.js";
import { TurnArchiveStore } from "./turn-archive-store.js";
import { RetentionPolicy } from "./retention.js";
import { runMigrations, schemaVersion } from "./migrations/migration-runner.js";
import { ThreadwiseSaver } from "./threadwise-saver.js";
import { TurnEventStore } from "./turn-event-store.js";
import { TurnStore } from "./turn-store.js";

export class DatabaseSetupError extends ThreadwiseError {
  override name = "DatabaseSetupError";
}

/**
 * The version of the indexes `setup()` makes. Bump it when an index is added or changed: a
 * function that finds an older version recorded sets the database up before serving. 9: set-up
 * seals the checkpoints' values (issue 44), which this release refuses to read clear with encryption on.
 */
export const DATABASE_SETUP_VERSION = 9;

const SETUP_ID = "indexes";

/**
 * Every content field `FieldCipher` encrypts, by collection (docs/security.md, "What is encrypted"): what
 * set-up encrypts in a database written in clear. `text` fields hold strings, `json` fields any value.
 */
export const ENCRYPTED_FIELDS = {
  [COLLECTIONS.messages]: { content: "text" },
  [COLLECTIONS.turns]: { answer: "text", origin: "json" },
  [COLLECTIONS.modelCalls]: { view: "json", sources: "json" },
  [COLLECTIONS.turnArchive]: { messages: "json" },
  [COLLECTIONS.artifacts]: { content: "text", preview: "text", provenance: "json" },
  [COLLECTIONS.turnEvents]: { events: "json" },
  [COLLECTIONS.conversations]: { title: "text" },
  [COLLECTIONS.approvals]: { context: "json", args: "json", "decision.args": "json", "decision.reason": "text" },
  [COLLECTIONS.recallTurns]: { question: "text", answer: "text", tools: "json" },
  [COLLECTIONS.followUps]: { title: "text", details: "text", owner: "text" },
  [COLLECTIONS.idempotency]: { data: "text", validation: "text" },
} as const satisfies Record<string, Record<string, "text" | "json">>;

/**
 * What the tenant's term key is applied to for the key of its checkpoint digests (list prefixes and
 * values, see `CheckpointContents`): a label with a space and NULs, which no recall term (a word)
 * can be, so the key never appears among the recall index's hashes.
 */
const CHECKPOINT_DIGEST_LABEL = "\u0000checkpoint digests\u0000";

/**
 * The content fields as set-up records them once it sealed them: a release that seals more fields than the one that
 * last set the database up with encryption on seals them at its set-up (the deploy step, `npm run db:setup`).
 */
const SEALED_FIELDS = JSON.stringify(ENCRYPTED_FIELDS);

/** The collections whose content fields `FieldCipher` encrypts. */
export const ENCRYPTED_COLLECTIONS = Object.keys(ENCRYPTED_FIELDS) as (keyof typeof ENCRYPTED_FIELDS)[];

/** What {@link ThreadwiseDatabase.encryptStoredContents} did. */
export interface ContentMigration {
  /** Fields encrypted that were stored clear. */
  encrypted: number;
  /** Documents left clear because their conversation is gone (retention removes them). */
  orphaned: number;
}

interface SetupDocument {
  _id: string;
  version: number;
  setUpAt: Date;
  /** Whether set-up last ran with content encryption on: when not, it encrypts what is stored clear (issue 44). */
  contentEncryption?: "on" | "off";
  /** The content fields set-up last sealed with encryption on (`ENCRYPTED_FIELDS`): when they differ, it seals what is stored clear again. */
  sealedFields?: string;
}

export interface ThreadwiseDatabaseOptions {
  dbName: string;
  /** Default: `DEFAULT_LEASE_TTL_MS` (lib/config). */
  leaseTtlMs?: number;
  /** Days of inactivity before a conversation expires everywhere. Default: `DEFAULT_RETENTION_DAYS`. */
  retentionDays?: number;
  /** Checkpoints kept per thread after each turn. Default: `DEFAULT_CHECKPOINTS_KEPT` (lib/config). */
  checkpointsKept?: number;
  /** What the lease measures time with. Default: the system clock. */
  clock?: Clock;
  /** Tenants' keys for contents at rest (docs/security.md, "Contents at rest"). Default: none, contents stored clear (`CONTENT_ENCRYPTION=off`). */
  contentKeys?: TenantKeys;
  /** Milliseconds a data key is reused. Default: `DEFAULT_DATA_KEY_MAX_AGE_MS` (lib/crypto). */
  dataKeyMaxAgeMs?: number;
}

/**
 * Every store of one database, over a client the caller owns (never closed here).
 * `setup()` creates the indexes, fails loudly if any cannot be made, and records that it ran; it
 * is a deploy step in AWS (docs/deploying.md, "Database set-up"), and `isSetUp()` is what a cold start reads.
 */
export class ThreadwiseDatabase {
  readonly db: Db;
  readonly conversations: ConversationStore;
  readonly messages: MessageStore;
  readonly turns: TurnStore;
  readonly lease: ConversationLease;
  readonly artifacts: ArtifactStore;
  /** Idempotency records of requests and tool side effects (Powertools persistence layer). */
  readonly idempotency: Collection<IdempotencyDocument>;
  readonly checkpointer: ThreadwiseSaver;
  readonly retention: RetentionPolicy;
  /** What `search_conversation` searches: finished turns, indexed when they finish. */
  readonly recall: RecallIndexStore;
  /** Finished turns archived out of threads' working sets. */
  readonly archive: TurnArchiveStore;
  /** Turns' streamed events, kept for clients that reconnect. */
  readonly turnEvents: TurnEventStore;
  /** Tool calls waiting for a person's decision, and the decisions. */
  readonly approvals: ApprovalStore;
  /** Where every content field is encrypted and decrypted, per the conversation's tenant. */
  readonly cipher: FieldCipher;
  /** Re-encryption after a rotation: walks the sealed fields (and any walker added, such as the checkpointer's). */
  readonly reseals: ContentResealer;
  readonly #termKeys: TenantTermKeys | undefined;

  constructor(client: MongoClient, options: ThreadwiseDatabaseOptions) {
    this.db = client.db(options.dbName);
    const conversations = this.db.collection<{ _id: string; owner?: { issuer: "api" | "slack" | "teams"; tenant: string | null } }>(COLLECTIONS.conversations);
    this.cipher = new FieldCipher({
      keys: options.contentKeys,
      maxAgeMs: options.dataKeyMaxAgeMs,
      tenantOf: async (conversationId) => {
        const owner = (await conversations.findOne({ _id: conversationId }, { projection: { owner: 1 } }))?.owner;
        if (!owner) throw new NotFoundError(`conversation ${conversationId} has no owner whose key could be used`);
        return { issuer: owner.issuer, tenant: owner.tenant };
      },
    });
    this.retention = new RetentionPolicy(this.db, { days: options.retentionDays });
    this.conversations = new ConversationStore(this.db, this.retention.periodMs, this.cipher);
    this.messages = new MessageStore(this.db, this.cipher);
    this.turns = new TurnStore(this.db, this.cipher);
    this.lease = new ConversationLease(this.conversations.collection, {
      ttlMs: options.leaseTtlMs,
      retentionMs: this.retention.periodMs,
      clock: options.clock,
    });
    this.artifacts = new ArtifactStore(this.db, { cipher: this.cipher });
    const termKeys = options.contentKeys ? new TenantTermKeys(this.db.collection<TermKeyDocument>(COLLECTIONS.termKeys), this.cipher) : undefined;
    this.#termKeys = termKeys;
    this.recall = new RecallIndexStore(this.db, {
      cipher: this.cipher,
      ...(termKeys && { termHasher: async (conversationId: string) => termKeys.hasherOf(await this.cipher.tenantOf(conversationId)) }),
    });
    this.archive = new TurnArchiveStore(this.db, { cipher: this.cipher });
    this.turnEvents = new TurnEventStore(this.db, { cipher: this.cipher });
    this.approvals = new ApprovalStore(this.db, this.cipher);
    this.idempotency = this.db.collection<IdempotencyDocument>(COLLECTIONS.idempotency);
    // A checkpoint's thread is its conversation (`thread_id` is the conversation id, for API, Agent Protocol and channel threads).
    this.checkpointer = new ThreadwiseSaver({
      client,
      dbName: options.dbName,
      checkpointsKept: options.checkpointsKept,
      expiresAfterMs: this.retention.periodMs,
      cipher: this.cipher,
      openedValueMaxAgeMs: options.dataKeyMaxAgeMs,
      ...(termKeys && {
        digestKeyOf: async (threadId: string) => Buffer.from((await termKeys.hasherOf(await this.cipher.tenantOf(threadId)))(CHECKPOINT_DIGEST_LABEL), "utf8"),
      }),
    });
    this.reseals = new ContentResealer(this.db, this.cipher, this.resealWalkers(), {
      dataKeyMaxAgeMs: options.dataKeyMaxAgeMs ?? DEFAULT_DATA_KEY_MAX_AGE_MS,
    });
  }

  /**
   * What re-encryption walks: every field of `ENCRYPTED_FIELDS` (a conversation's own under its `_id`, the
   * rest under their `conversationId`), then the checkpointer's values thread by thread, then the tenants' recall
   * term keys, sealed under the tenant itself.
   */
  private resealWalkers(): ResealWalker[] {
    const contents = new CollectionResealWalker(
      "contents",
      Object.entries(ENCRYPTED_FIELDS).map(([name, fields]) => ({
        collection: this.db.collection(name),
        fields: Object.keys(fields),
        owner: {
          kind: "conversation" as const,
          conversationOf: (doc) => (name === COLLECTIONS.conversations ? String(doc._id) : (doc.conversationId as string | undefined)),
        },
      })),
    );
    const termKeys = new CollectionResealWalker("term_keys", [
      {
        collection: this.db.collection(COLLECTIONS.termKeys),
        fields: ["key"],
        owner: { kind: "tenant", tenantFilter: (tenant) => ({ _id: tenantKey(tenant) as never }) },
      },
    ]);
    const checkpoints = new CheckpointResealWalker(this.db.collection(COLLECTIONS.conversations), this.checkpointer, this.cipher);
    return [contents, checkpoints, termKeys];
  }

  /**
   * Creates every index (and those of `extra`, the collections of layers above the store), records the
   * version, then runs the migrations due.
   * @throws SchemaVersionError when the database's schema version is newer than this release's.
   */
  async setup(extra: readonly (() => Promise<unknown>)[] = []): Promise<void> {
    // Refused before anything is written when a later release set the database up.
    await schemaVersion(this.db);
    const errors = [...(await this.checkpointer.setup())];
    const results = await Promise.allSettled([
      this.conversations.setup(),
      this.messages.setup(),
      this.turns.setup(),
      this.artifacts.setup(),
      this.retention.setup(),
      this.recall.setup(),
      this.archive.setup(),
      this.turnEvents.setup(),
      this.approvals.setup(),
      this.setupFollowUps(),
      this.setupIdempotency(),
      this.setupIdempotencyOwners(),
      ...extra.map((step) => step()),
    ]);
    for (const r of results) if (r.status === "rejected") errors.push(r.reason);
    if (errors.length > 0) throw new DatabaseSetupError(`database setup failed (${errors.length} errors)`, { cause: errors[0] });
    await this.setupRecord().updateOne({ _id: SETUP_ID }, { $set: { version: DATABASE_SETUP_VERSION, setUpAt: new Date() } }, { upsert: true });
    // The numbered migrations due (lib/store/migrations/), each recorded in the schema version document.
    await runMigrations(this.db);
    // Contents stored clear (by a release before issue 44, or with CONTENT_ENCRYPTION=off) are encrypted the first
    // time set-up runs with encryption on. Not a numbered migration: it depends on the setting, not on the release,
    // and runs again whenever encryption is switched on after running off (docs/storage.md, "Migrations").
    const record = await this.setupRecord().findOne({ _id: SETUP_ID });
    // So are the fields a release seals that the one before did not (the checkpoints, idempotency records, approvals,
    // provenance): a database set up encrypted by a release before this one records no `sealedFields`, or others.
    if (this.cipher.enabled && (record?.contentEncryption !== "on" || record.sealedFields !== SEALED_FIELDS)) {
      await this.encryptStoredContents();
      await this.recall.keyStoredTerms();
    }
    const state = this.cipher.enabled ? "on" : "off";
    await this.setupRecord().updateOne({ _id: SETUP_ID }, { $set: { contentEncryption: state, ...(this.cipher.enabled && { sealedFields: SEALED_FIELDS }) } });
  }

  /**
   * Encrypts every content field stored clear (by a release before issue 44, or with
   * `CONTENT_ENCRYPTION=off`), leaving those already encrypted alone: what set-up runs the first
   * time it finds encryption on. Idempotent; a document whose conversation is gone is left for
   * retention and counted.
   */
  async encryptStoredContents(): Promise<ContentMigration> {
    // Checkpoints: every serialized value, list and value digests keyed, `metadata_search` narrowed (`ThreadwiseSaver.resealStoredCheckpoints`).
    const checkpoints = await this.checkpointer.resealStoredCheckpoints((stored) => !this.cipher.isSealed(stored));
    const result: ContentMigration = { encrypted: checkpoints.resealed, orphaned: checkpoints.orphaned };
    for (const [collection, fields] of Object.entries(ENCRYPTED_FIELDS)) {
      const docs = this.db.collection<{ _id: string; conversationId?: string } & Record<string, unknown>>(collection);
      const projection = Object.fromEntries([["conversationId", 1], ...Object.keys(fields).map((f) => [f, 1])]);
      for await (const doc of docs.find({}, { projection })) {
        const clear = Object.entries(fields).filter(([field]) => {
          const value = fieldValue(doc, field);
          return value !== undefined && value !== null && !this.cipher.isSealed(value);
        });
        // A conversation's own fields (its title) are sealed under its own id.
        const conversationId = collection === COLLECTIONS.conversations ? doc._id : doc.conversationId;
        if (clear.length === 0 || conversationId === undefined) continue;
        const sealed: Record<string, unknown> = {};
        try {
          for (const [field, kind] of clear) {
            const ref = { collection, id: doc._id, field };
            const value = fieldValue(doc, field);
            sealed[field] =
              kind === "text" ? await this.cipher.sealText(conversationId, ref, String(value)) : await this.cipher.sealJson(conversationId, ref, value);
          }
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
          result.orphaned += 1;
          continue;
        }
        await docs.updateOne({ _id: doc._id }, { $set: sealed });
        result.encrypted += clear.length;
      }
    }
    // An approval's resume job keeps no question (the turn's sealed origin has it): one stored with it loses it.
    const questions = await this.db.collection(COLLECTIONS.approvals).updateMany({ "origin.content": { $exists: true } }, { $unset: { "origin.content": "" } });
    result.encrypted += questions.modifiedCount;
    return result;
  }

  /** True when `setup()` of this version (or a later one) has run on this database: one read. */
  async isSetUp(): Promise<boolean> {
    const record = await this.setupRecord().findOne({ _id: SETUP_ID });
    return record !== null && record.version >= DATABASE_SETUP_VERSION;
  }

  private setupRecord(): Collection<SetupDocument> {
    return this.db.collection<SetupDocument>(COLLECTIONS.setup);
  }

  /** The TTL index that removes expired idempotency records, of requests and tool effects alike. */
  private async setupIdempotency(): Promise<void> {
    await new IdempotencyPersistenceLayer({ collection: this.idempotency }).setup();
  }

  /** Deletion and retention find a conversation's follow-ups by its id. */
  private async setupFollowUps(): Promise<void> {
    await this.db.collection(COLLECTIONS.followUps).createIndex({ conversationId: 1 }, { name: "conversation" });
  }

  /** Deletion finds a conversation's idempotency records, and erasure a user's, by what is stored beside their hashes. */
  private async setupIdempotencyOwners(): Promise<void> {
    await this.idempotency.createIndex({ conversationId: 1 }, { name: "conversation", sparse: true });
    await this.idempotency.createIndex({ "owner.issuer": 1, "owner.tenant": 1, "owner.subject": 1 }, { name: "owner", sparse: true });
  }

  /**
   * A new key for the tenant (`tenant` null: the issuer's callers without one): new writes use it,
   * what the earlier keys encrypted stays readable, and its re-encryption under the new key is
   * scheduled from when every process uses it, `effectiveAt` (docs/security.md, "Rotation").
   */
  async rotateTenantKey(
    issuer: IssuerKind,
    tenant: string | null,
    now?: Date,
  ): Promise<{ keyId: string; rotatedAt: Date; effectiveAt: Date; job: ResealJobDocument }> {
    const rotated = await this.cipher.rotate({ issuer, tenant }, now);
    const job = await this.reseals.schedule({ issuer, tenant }, rotated.keyId, rotated.rotatedAt);
    return { ...rotated, effectiveAt: job.effectiveAt, job };
  }

  /**
   * Crypto-shredding: destroys every key of the tenant, so what they encrypted cannot be read from
   * this database or any copy of it; returns the receipt (which keys, when final). Deleting the
   * tenant's documents is the caller's (docs/security.md, "Crypto-shredding").
   */
  async shredTenantKeys(issuer: IssuerKind, tenant: string | null): Promise<ShredReceipt> {
    const receipt = await this.cipher.shred({ issuer, tenant });
    this.#termKeys?.forget({ issuer, tenant });
    // Nothing of the tenant is left to re-encrypt.
    await this.reseals.jobs.deleteOne({ _id: tenantKey({ issuer, tenant }) });
    return receipt;
  }

  /**
   * Removes the conversation from every collection, checkpoints and writes included, and what
   * would otherwise expire by itself: its idempotency records (requests and tool effects, found by
   * the conversation stored beside their hashes) and its queued jobs (`turn_jobs`, local mode). The
   * lease is revoked first, so a turn still running is fenced out: its next write fails and its
   * heartbeat stops it (docs/storage.md, "Turns and fencing").
   */
  async deleteConversation(conversationId: string): Promise<void> {
    const doc = await this.conversations.get(conversationId);
    await this.lease.revoke(conversationId);
    await this.checkpointer.deleteThread(conversationId);
    // A channel job names its thread by the channel's key, an API job by the conversation id.
    const jobKeys = doc?.channel.key === undefined ? [conversationId] : [conversationId, doc.channel.key];
    await Promise.all([
      this.idempotency.deleteMany({ conversationId }),
      this.db.collection(COLLECTIONS.turnJobs).deleteMany({ "job.conversationKey": { $in: jobKeys } }),
    ]);
    await Promise.all([
      this.messages.deleteByConversation(conversationId),
      this.turns.deleteByConversation(conversationId),
      this.artifacts.deleteByConversation(conversationId),
      this.recall.deleteByConversation(conversationId),
      this.archive.deleteByConversation(conversationId),
      this.turnEvents.deleteByConversation(conversationId),
      this.approvals.deleteByConversation(conversationId),
      this.db.collection(COLLECTIONS.followUps).deleteMany({ conversationId }),
    ]);
    await this.conversations.delete(conversationId);
  }
}
