import { randomUUID, createHash } from "node:crypto";
import { MongoServerError, type Collection, type Db } from "mongodb";
import type { AuditActor, AuditLog } from "../audit/audit-log.js";
import type { McpServerEntry } from "../config/mcp-servers-config.js";
import { canonicalHash, canonicalJson } from "../audit/canonical-json.js";
import { DELETED_CHANNEL_KEY_MS } from "../store/conversation-store.js";
import { ConversationMembers } from "../store/conversation-members.js";
import { COLLECTIONS } from "../store/collections.js";
import type { ThreadwiseDatabase } from "../store/database.js";
import { NotFoundError } from "../errors.js";
import {
  CONVERSATION_COLLECTIONS,
  limitScopeFilter,
  notPrincipalFilter,
  principalFilter,
  subjectOf,
  usageFilter,
  type DataSubject,
  type DataTarget,
} from "./data-subject.js";

/** What an erased participant's messages in a thread others share say instead (docs/data-lifecycle.md). */
export const REDACTED_CONTENT = "[erased]";
/** Days an SQS message (a queued turn) may live: the dead-letter queue keeps one 14 days. */
const SQS_DAYS = 14;
const DAY_MS = 86_400_000;
const BATCH = 50;
/** Shorter texts are not searched for in the others' answers: "yes" would be replaced everywhere. */
const MIN_QUOTE_CHARS = 12;
const DUPLICATE_KEY = 11000;

/** Something the erasure could not remove now, where it is, and when it goes by itself. */
export interface PendingDeletion {
  where: string;
  what: string;
  /** When it is gone at the latest; null when a setting outside the product decides (backups, log groups). */
  until: string | null;
}

/** What an erasure removed, what it could not yet, and a hash over it all, to be kept (docs/data-lifecycle.md, "Deletion receipts"). */
export interface DeletionReceipt {
  receiptId: string;
  target: DataTarget;
  requestedBy: AuditActor;
  startedAt: string;
  completedAt: string;
  /**
   * `deletion`: documents deleted. `crypto-shredding`: a tenant's documents deleted and its content keys
   * destroyed, so every copy of its encrypted contents (backups included) is unreadable from `keys.finalAt`.
   */
  method: "deletion" | "crypto-shredding";
  /** With `crypto-shredding`: the keys destroyed (ids, never material) and when no copy of them is left. */
  keys?: ShreddedKeys;
  /** Documents deleted, by collection. */
  deleted: Record<string, number>;
  /** Documents kept with the erased person's part removed (a shared thread's record, approvals they decided), by collection. */
  redacted: Record<string, number>;
  pending: PendingDeletion[];
  notes: string[];
  /** `sha256`: of the canonical JSON of every other field (sorted keys, no whitespace). */
  hashAlgorithm: "sha256-canonical-json";
  hash: string;
}

/**
 * What is derived from contents but stored clear (docs/security.md, "Not encrypted"): a shred cannot reach
 * its copies in backups, and the receipt says so rather than claim it.
 */
export const LEFT_CLEAR =
  "the recall index's embeddings (vectors made from each turn's text, when an embedding model is configured) " +
  "and conversations' client metadata (searched by equality)";

/** What a tenant's erasure destroyed of its keys (docs/security.md, "Crypto-shredding"). */
export interface ShreddedKeys {
  /** `local`: key files under `.local/content-keys/`; `kms`: KMS keys scheduled for deletion. */
  source: "local" | "kms";
  /** Local key names or KMS key ARNs. */
  ids: string[];
  shreddedAt: string;
  /** From when no copy of the key material exists (KMS: the end of its pending-deletion window, plus the data keys' cache age). */
  finalAt: string;
}

/** An erasure job (`erasures`): its target, progress, and once completed its receipt. Re-running a target resumes its unfinished job. */
export interface ErasureJob {
  _id: string;
  target: DataTarget;
  /** The target as canonical JSON: unique among running jobs. */
  targetKey: string;
  requestedBy: AuditActor;
  status: "running" | "completed";
  /** Phases finished, in order. */
  done: string[];
  deleted: Record<string, number>;
  redacted: Record<string, number>;
  /** A tenant's keys once shredded (the `keys` phase). */
  keys?: ShreddedKeys;
  /** The conversation being deleted when the job stopped, and its counts taken before: added when it is deleted again. */
  current?: { conversationId: string; counts: Record<string, number> };
  startedAt: Date;
  updatedAt: Date;
  completedAt?: Date;
  receipt?: DeletionReceipt;
  /** A conversation's owner tenant, recorded before it is deleted: the audit chain its erasure joins. */
  owner?: { issuer: string; tenant: string | null };
}

export interface EraserOptions {
  database: ThreadwiseDatabase;
  /** Each completed erasure is an audit record (`erasure`). Default: none. */
  audit?: AuditLog;
  /** Days audit records are kept, said in the receipt. */
  auditRetentionDays: number;
  /** The MCP servers every tenant has (`MCP_SERVERS`): a tenant's erasure removes its clients registered with them too. Default: none. */
  mcpDefaults?: readonly McpServerEntry[];
  now?: () => Date;
}

/** Who asks, and from where: in the receipt and the audit record. */
export interface ErasureRequest {
  target: DataTarget;
  actor: AuditActor;
  channel: string;
  requestId?: string;
}

type Counts = Record<string, number>;

/**
 * Erasure of a conversation, a user or a tenant (docs/data-lifecycle.md, "Erasure"). Idempotent
 * and resumable: the job is a document with the phases done and the counts so far, every phase
 * deletes what is still there and can run again, and a request for a target whose job did not
 * finish resumes that job. Each erasure ends with a deletion receipt.
 */
export class Eraser {
  readonly jobs: Collection<ErasureJob>;
  private readonly db: Db;
  private readonly now: () => Date;

  constructor(private readonly options: EraserOptions) {
    this.db = options.database.db;
    this.jobs = this.db.collection<ErasureJob>(COLLECTIONS.erasures);
    this.now = options.now ?? (() => new Date());
  }

  /** One running job per target; idempotent, run once at start-up. */
  async setup(): Promise<void> {
    await this.jobs.createIndex({ targetKey: 1 }, { name: "running_target", unique: true, partialFilterExpression: { status: "running" } });
  }

  /** Erases the target, resuming its unfinished job if there is one; returns the receipt. */
  async erase(request: ErasureRequest): Promise<DeletionReceipt> {
    const job = await this.start(request);
    return this.run(job, request);
  }

  /** A job by id, or null. */
  async get(id: string): Promise<ErasureJob | null> {
    return this.jobs.findOne({ _id: id });
  }

  private async start(request: ErasureRequest): Promise<ErasureJob> {
    const { target } = request;
    const targetKey = canonicalJson(target);
    for (;;) {
      const running = await this.jobs.findOne({ targetKey, status: "running" });
      if (running) return running;
      if (target.kind === "conversation" && !(await this.options.database.conversations.get(target.conversationId))) {
        throw new NotFoundError(`conversation ${target.conversationId} not found`);
      }
      const now = this.now();
      const job: ErasureJob = {
        _id: randomUUID(),
        target: request.target,
        targetKey,
        requestedBy: request.actor,
        status: "running",
        done: [],
        deleted: {},
        redacted: {},
        startedAt: now,
        updatedAt: now,
      };
      try {
        await this.jobs.insertOne(job);
        return job;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      }
    }
  }

  private async run(job: ErasureJob, request: ErasureRequest): Promise<DeletionReceipt> {
    if (job.current) await this.finishCurrent(job._id, job.current);
    for (const [phase, step] of this.phasesOf(job)) {
      if (job.done.includes(phase)) continue;
      await step();
      await this.jobs.updateOne({ _id: job._id }, { $addToSet: { done: phase }, $set: { updatedAt: this.now() } });
    }
    const finished = (await this.jobs.findOne({ _id: job._id })) as ErasureJob;
    const receipt = this.receiptOf(finished);
    await this.jobs.updateOne({ _id: job._id }, { $set: { status: "completed", completedAt: new Date(receipt.completedAt), receipt } });
    const { target } = job;
    await this.options.audit?.append({
      action: "erasure",
      actor: request.actor,
      tenant: target.kind === "conversation" ? (finished.owner ?? { issuer: "unknown", tenant: null }) : { issuer: target.issuer, tenant: target.tenant },
      resource: { erasureId: job._id, ...targetIds(job.target) },
      channel: request.channel,
      requestId: request.requestId,
      detail: { receiptHash: receipt.hash, deleted: receipt.deleted, redacted: receipt.redacted },
    });
    return receipt;
  }

  private phasesOf(job: ErasureJob): [string, () => Promise<void>][] {
    const { target } = job;
    if (target.kind === "conversation") {
      return [["conversation", () => this.eraseConversationTarget(job._id, target.conversationId)]];
    }
    const who = subjectOf(target);
    const owned = target.kind === "user" ? principalFilter("owner", who) : principalFilter("owner", { issuer: who.issuer, tenant: who.tenant });
    return [
      ["owned_conversations", () => this.deleteConversations(job._id, owned)],
      ["shared_conversations", () => this.redactSharedThreads(job._id, who)],
      ...(target.kind === "user" ? [["memberships", () => this.removeMemberships(job._id, who)] as [string, () => Promise<void>]] : []),
      ["records", () => this.deleteRecords(job._id, who)],
      ["account", () => this.deleteAccount(job._id, who)],
      ...(target.kind === "tenant"
        ? ([
            ["tenant_settings", () => this.deleteTenantSettings(job._id, who)],
            // Last: the phases above read contents (a shared thread's redaction) that the shred makes unreadable.
            ["keys", () => this.shredTenantKeys(job._id, who, job.requestedBy)],
          ] as [string, () => Promise<void>][])
        : []),
    ];
  }

  private async eraseConversationTarget(jobId: string, conversationId: string): Promise<void> {
    const doc = await this.options.database.conversations.get(conversationId);
    // Gone: an earlier run of this job deleted it.
    if (!doc) return;
    await this.jobs.updateOne({ _id: jobId }, { $set: { owner: { issuer: doc.owner.issuer, tenant: doc.owner.tenant } } });
    await this.deleteConversation(jobId, conversationId);
  }

  /** Deletes every conversation the filter selects, a batch at a time, until none is left. */
  private async deleteConversations(jobId: string, filter: Record<string, unknown>): Promise<void> {
    for (;;) {
      const batch = await this.options.database.conversations.collection
        .find(filter, { projection: { _id: 1 } })
        .limit(BATCH)
        .toArray();
      if (batch.length === 0) return;
      for (const { _id } of batch) await this.deleteConversation(jobId, _id);
    }
  }

  /** Counts the conversation's documents, records them as the job's current one, deletes it, then adds the counts. */
  private async deleteConversation(jobId: string, conversationId: string): Promise<void> {
    const counts = await this.countConversation(conversationId);
    await this.jobs.updateOne({ _id: jobId }, { $set: { current: { conversationId, counts } } });
    await this.finishCurrent(jobId, { conversationId, counts });
  }

  private async finishCurrent(jobId: string, current: { conversationId: string; counts: Counts }): Promise<void> {
    await this.options.database.deleteConversation(current.conversationId);
    await this.add(jobId, current.counts, {}, { $unset: { current: "" } });
  }

  private async countConversation(conversationId: string): Promise<Counts> {
    const doc = await this.options.database.conversations.get(conversationId);
    const jobKeys = doc?.channel.key === undefined ? [conversationId] : [conversationId, doc.channel.key];
    const entries = await Promise.all([
      ...CONVERSATION_COLLECTIONS.map(async ([name, field]) => [name, await this.db.collection(name).countDocuments({ [field]: conversationId })] as const),
      (async () =>
        [COLLECTIONS.turnJobs, await this.db.collection(COLLECTIONS.turnJobs).countDocuments({ "job.conversationKey": { $in: jobKeys } })] as const)(),
    ]);
    return Object.fromEntries(entries.filter(([, n]) => n > 0));
  }

  /**
   * Threads owned by someone else (a Slack workspace, a Teams tenant) where the person asked: a
   * thread only they asked in is deleted whole; in one others asked in too, their questions and the
   * answers to them are redacted in the record and their turns lose who asked, while the others'
   * messages stay. The thread's model state (checkpoints, archive, recall index, the recorded
   * model views and stream events) mixes everyone's words, so it is deleted: the thread goes on
   * from its record, and its model no longer remembers the turns before the erasure.
   */
  private async redactSharedThreads(jobId: string, who: DataSubject): Promise<void> {
    const turns = this.db.collection(COLLECTIONS.turns);
    for (;;) {
      const asked = await turns
        .find(principalFilter("askedBy", who), { projection: { conversationId: 1 } })
        .limit(BATCH)
        .toArray();
      if (asked.length === 0) return;
      for (const conversationId of new Set(asked.map((t) => String(t.conversationId)))) {
        const others = await turns.countDocuments({ conversationId, ...notPrincipalFilter("askedBy", who) });
        const exists = await this.options.database.conversations.get(conversationId);
        if (others === 0 && exists) await this.deleteConversation(jobId, conversationId);
        else await this.redactThread(jobId, conversationId, who);
      }
    }
  }

  private async redactThread(jobId: string, conversationId: string, who: DataSubject): Promise<void> {
    const turns = this.db.collection<{ _id: string }>(COLLECTIONS.turns);
    const theirs = (await turns.find({ conversationId, ...principalFilter("askedBy", who) }, { projection: { _id: 1 } }).toArray()).map((t) => t._id);
    const redacted: Counts = {};
    const deleted: Counts = {};
    const messageDocs = this.db.collection<{ _id: string; turnId: string; content: unknown }>(COLLECTIONS.messages);
    // Contents are encrypted (docs/security.md, "Contents at rest"): read and rewritten through the database's cipher.
    const { cipher } = this.options.database;
    const ref = (collection: string, id: string, field: string) => ({ collection, id, field });
    const openMessage = (m: { _id: string; content: unknown }) => cipher.openText(conversationId, ref(COLLECTIONS.messages, m._id, "content"), m.content);
    const sealMessage = (id: string, text: string) => cipher.sealText(conversationId, ref(COLLECTIONS.messages, id, "content"), text);
    // Their words, to find where the others' answers quote them (exactly: a paraphrase cannot be found).
    const mine = await messageDocs.find({ conversationId, turnId: { $in: theirs } }).toArray();
    const quoted = (await Promise.all(mine.map(openMessage))).filter((text) => text !== REDACTED_CONTENT && text.length >= MIN_QUOTE_CHARS);
    redacted[COLLECTIONS.messages] = 0;
    for (const m of mine) {
      if ((await openMessage(m)) === REDACTED_CONTENT) continue;
      await messageDocs.updateOne({ _id: m._id }, { $set: { content: await sealMessage(m._id, REDACTED_CONTENT), redacted: true } });
      redacted[COLLECTIONS.messages] += 1;
    }
    const scrub = (text: string) => quoted.reduce((out, q) => out.split(q).join(REDACTED_CONTENT), text);
    for (const m of await messageDocs.find({ conversationId, turnId: { $nin: theirs } }).toArray()) {
      const text = await openMessage(m);
      if (scrub(text) !== text) {
        await messageDocs.updateOne({ _id: m._id }, { $set: { content: await sealMessage(m._id, scrub(text)) } });
        redacted[COLLECTIONS.messages] += 1;
      }
    }
    const turnDocs = this.db.collection<{ _id: string; answer?: unknown }>(COLLECTIONS.turns);
    for (const turn of await turnDocs.find({ conversationId, _id: { $nin: theirs }, answer: { $exists: true } }).toArray()) {
      const answer = await cipher.openText(conversationId, ref(COLLECTIONS.turns, turn._id, "answer"), turn.answer);
      if (scrub(answer) !== answer) {
        await turnDocs.updateOne(
          { _id: turn._id },
          { $set: { answer: await cipher.sealText(conversationId, ref(COLLECTIONS.turns, turn._id, "answer"), scrub(answer)) } },
        );
        redacted[COLLECTIONS.turns] = (redacted[COLLECTIONS.turns] ?? 0) + 1;
      }
    }
    // The title is the thread's first question, maybe theirs: the next turn gives it another.
    await this.db.collection(COLLECTIONS.conversations).updateOne({ _id: conversationId as never }, { $set: { title: null } });
    // The thread's model state holds everyone's words: deleted whole (see above).
    const checkpointCounts = await Promise.all(
      [COLLECTIONS.checkpoints, COLLECTIONS.checkpointWrites, COLLECTIONS.checkpointBlobs, COLLECTIONS.checkpointThreads].map(
        async (name) => [name, await this.db.collection(name).countDocuments({ thread_id: conversationId })] as const,
      ),
    );
    await this.options.database.checkpointer.deleteThread(conversationId);
    for (const [name, n] of checkpointCounts) deleted[name] = n;
    for (const name of [COLLECTIONS.modelCalls, COLLECTIONS.turnArchive, COLLECTIONS.recallTurns, COLLECTIONS.recallIndex, COLLECTIONS.turnEvents]) {
      deleted[name] = (await this.db.collection(name).deleteMany({ conversationId })).deletedCount;
    }
    for (const [name, prefix] of [
      [COLLECTIONS.approvals, "requester"],
      [COLLECTIONS.followUps, "createdBy"],
      [COLLECTIONS.idempotency, "owner"],
    ] as const) {
      deleted[name] = (await this.db.collection(name).deleteMany({ conversationId, ...principalFilter(prefix, who) })).deletedCount;
    }
    deleted[COLLECTIONS.artifacts] = await this.deleteArtifacts({ conversationId, ...principalFilter("createdBy", who) });
    // Last: the turns are how a resumed job finds the thread again.
    const turnsRedacted = await turns.updateMany(
      { _id: { $in: theirs } },
      { $set: { redacted: true }, $unset: { answer: "", error: "", askedBy: "", origin: "", progress: "" } },
    );
    redacted[COLLECTIONS.turns] = (redacted[COLLECTIONS.turns] ?? 0) + turnsRedacted.modifiedCount;
    await this.add(jobId, deleted, redacted);
  }

  /** An artifact's head names who made it; its parts (a large one's pieces) go with it. */
  private async deleteArtifacts(filter: Record<string, unknown>): Promise<number> {
    const artifacts = this.db.collection<{ _id: string }>(COLLECTIONS.artifacts);
    let deleted = 0;
    for (;;) {
      const heads = (
        await artifacts
          .find(filter, { projection: { _id: 1 } })
          .limit(BATCH * 4)
          .toArray()
      ).map((h) => h._id);
      if (heads.length === 0) return deleted;
      deleted += (await artifacts.deleteMany({ kind: "part", handle: { $in: heads } })).deletedCount;
      deleted += (await artifacts.deleteMany({ _id: { $in: heads } })).deletedCount;
    }
  }

  /** What the person made in conversations that are not theirs and not redacted above, and what was queued or remembered for them. */
  private async deleteRecords(jobId: string, who: DataSubject): Promise<void> {
    const deleted: Counts = {};
    const redacted: Counts = {};
    deleted[COLLECTIONS.artifacts] = await this.deleteArtifacts(principalFilter("createdBy", who));
    for (const [name, prefix] of [
      [COLLECTIONS.approvals, "requester"],
      [COLLECTIONS.followUps, "createdBy"],
      [COLLECTIONS.idempotency, "owner"],
      [COLLECTIONS.turnJobs, "job.principal"],
    ] as const) {
      deleted[name] = (await this.db.collection(name).deleteMany(principalFilter(prefix, who))).deletedCount;
    }
    // An approval they decided in someone else's thread keeps the decision, not who made it.
    redacted[COLLECTIONS.approvals] = (
      await this.db
        .collection(COLLECTIONS.approvals)
        .updateMany(principalFilter("decision.by", who), { $set: { "decision.by.subject": REDACTED_CONTENT, "decision.by.tenant": null } })
    ).modifiedCount;
    await this.add(jobId, deleted, redacted);
  }

  /**
   * The user's memberships of others' API conversations (docs/api.md, "Members"): removed, the
   * conversations and their other members kept; counted under `conversation_members`. A tenant's
   * erasure deletes its conversations whole, members and all.
   */
  private async removeMemberships(jobId: string, who: DataSubject): Promise<void> {
    if (who.subject === undefined) return;
    const principal = { issuer: who.issuer, tenant: who.tenant, subject: who.subject };
    const { conversations } = this.options.database;
    const shared = await conversations.collection.find({ members: { $elemMatch: principal } }, { projection: { _id: 1 } }).toArray();
    let removed = 0;
    for (const { _id } of shared) {
      const change = await new ConversationMembers(conversations).removeMember(_id, principal).catch((error: unknown) => {
        // Removed or deleted meanwhile: nothing of theirs is left there.
        if (error instanceof NotFoundError) return undefined;
        throw error;
      });
      if (change) removed += 1;
    }
    if (removed > 0) await this.add(jobId, {}, { conversation_members: removed });
  }

  /** Usage, limits and their counters, and MCP OAuth tokens and sign-ins (what `McpOAuth.deleteUserData` deletes, for a tenant's every user). */
  private async deleteAccount(jobId: string, who: DataSubject): Promise<void> {
    const deleted: Counts = {
      [COLLECTIONS.usageDaily]: (await this.db.collection(COLLECTIONS.usageDaily).deleteMany(usageFilter(who))).deletedCount,
      [COLLECTIONS.limitCounters]: (await this.db.collection(COLLECTIONS.limitCounters).deleteMany(limitScopeFilter("_id", who))).deletedCount,
      [COLLECTIONS.limitOverrides]: (await this.db.collection(COLLECTIONS.limitOverrides).deleteMany(limitScopeFilter("_id", who))).deletedCount,
      [COLLECTIONS.mcpOAuthTokens]: (await this.db.collection(COLLECTIONS.mcpOAuthTokens).deleteMany(principalFilter("", who))).deletedCount,
      [COLLECTIONS.mcpOAuthSignIns]: (await this.db.collection(COLLECTIONS.mcpOAuthSignIns).deleteMany(principalFilter("principal", who))).deletedCount,
    };
    await this.add(jobId, deleted, {});
  }

  /** A tenant's MCP servers, and the clients registered for it with their authorization servers (its own servers' and the defaults'). */
  private async deleteTenantSettings(jobId: string, who: DataSubject): Promise<void> {
    const servers = this.db.collection<{ issuer: string; tenant: string | null; entry?: McpServerEntry }>(COLLECTIONS.mcpServers);
    const own = await servers.find({ issuer: who.issuer, tenant: who.tenant }).toArray();
    const entries = [...own.flatMap((d) => (d.entry ? [d.entry] : [])), ...(this.options.mcpDefaults ?? [])];
    // Registered per tenant, server name and URL (`McpOAuthStore.saveClient`).
    const clientIds = entries.flatMap((e) => (e.transport.kind === "streamable-http" ? [sha256(JSON.stringify([who.tenant, e.name, e.transport.url]))] : []));
    const deleted: Counts = {
      [COLLECTIONS.mcpOAuthClients]: (await this.db.collection<{ _id: string }>(COLLECTIONS.mcpOAuthClients).deleteMany({ _id: { $in: clientIds } }))
        .deletedCount,
      [COLLECTIONS.mcpServers]: (await servers.deleteMany({ issuer: who.issuer, tenant: who.tenant })).deletedCount,
    };
    await this.add(jobId, deleted, {});
  }

  /**
   * Crypto-shredding (docs/security.md): destroys the tenant's content keys, so what they encrypted is
   * unreadable in this database and in every copy of it, then deletes its term key (sealed by them).
   * With content encryption off there are no keys: the receipt says the erasure was by deletion.
   */
  private async shredTenantKeys(jobId: string, who: DataSubject, actor: AuditActor): Promise<void> {
    const { database } = this.options;
    if (!database.cipher.enabled) return;
    const shred = await database.shredTenantKeys(who.issuer, who.tenant);
    const keys: ShreddedKeys = {
      source: shred.keySource,
      ids: shred.keys,
      shreddedAt: shred.shreddedAt.toISOString(),
      finalAt: shred.finalAt.toISOString(),
    };
    const termKeys = (await this.db.collection<{ _id: string }>(COLLECTIONS.termKeys).deleteMany({ _id: JSON.stringify([who.issuer, who.tenant]) }))
      .deletedCount;
    await this.add(jobId, { [COLLECTIONS.termKeys]: termKeys }, {}, { $set: { keys } });
    await this.options.audit?.append({
      action: "key.shred",
      actor,
      tenant: { issuer: who.issuer, tenant: who.tenant },
      resource: { erasureId: jobId, keyIds: keys.ids.join(",") },
      channel: actor.issuer === "cli" ? "cli" : actor.issuer,
      detail: { keySource: keys.source, keys: keys.ids.length, finalAt: keys.finalAt },
    });
  }

  /** Adds counts to the job (and `extra`, such as clearing its current conversation) in one update. */
  private async add(jobId: string, deleted: Counts, redacted: Counts, extra: Record<string, unknown> = {}): Promise<void> {
    const inc = { ...prefixed("deleted", deleted), ...prefixed("redacted", redacted) };
    const { $set: set, ...rest } = extra as { $set?: Record<string, unknown> };
    await this.jobs.updateOne({ _id: jobId }, { ...(Object.keys(inc).length > 0 && { $inc: inc }), $set: { updatedAt: this.now(), ...set }, ...rest });
  }

  private receiptOf(job: ErasureJob): DeletionReceipt {
    const completedAt = this.now();
    const at = (days: number) => new Date(completedAt.getTime() + days * DAY_MS).toISOString();
    const deletedChannelKeys = (job.deleted[COLLECTIONS.conversations] ?? 0) > 0;
    const pending: PendingDeletion[] = [
      ...(deletedChannelKeys
        ? [
            {
              where: COLLECTIONS.deletedChannelKeys,
              what: "the channel and thread key of each deleted channel conversation (no content, no person), so that a late job of it is refused",
              until: at(DELETED_CHANNEL_KEY_MS / DAY_MS),
            },
          ]
        : []),
      {
        where: "SQS turn queue (AWS)",
        what: "turn jobs already queued (a question's text) cannot be removed one by one; the worker refuses each, its conversation being gone",
        until: at(SQS_DAYS),
      },
      ...(job.keys
        ? [
            {
              where: "MongoDB backups",
              what:
                "snapshots taken before this erasure keep the tenant's documents encrypted; " +
                "its keys are destroyed, so they are unreadable once the shred is final",
              until: job.keys.finalAt,
            },
            {
              where: "MongoDB backups (not encrypted)",
              what: `snapshots taken before this erasure keep ${LEFT_CLEAR} readable until they expire (docs/security.md, "Contents at rest")`,
              until: null,
            },
          ]
        : [
            {
              where: "MongoDB backups",
              what: "snapshots taken before this erasure keep what it deleted until they expire",
              until: null,
            },
          ]),
      {
        where: COLLECTIONS.auditLog,
        what: "audit records naming the person or conversation by id (never contents), this erasure's included",
        until: at(this.options.auditRetentionDays),
      },
      { where: "CloudWatch Logs (AWS)", what: "log lines naming ids, never contents", until: null },
    ];
    const notes =
      job.target.kind !== "tenant"
        ? []
        : job.keys
          ? [
              `the tenant's ${job.keys.source === "kms" ? "KMS keys were scheduled for deletion" : "key file was deleted"} (${job.keys.ids.length} keys): ` +
                `every copy of its encrypted contents, backups included, is unreadable from ${job.keys.finalAt}; ` +
                `backups taken before it still hold ${LEFT_CLEAR} in clear until they expire`,
            ]
          : [
              "content encryption is off (CONTENT_ENCRYPTION=off): the tenant was erased by deleting its documents, " +
                "and its backups keep them until they expire",
            ];
    const body: Omit<DeletionReceipt, "hash"> = {
      receiptId: job._id,
      target: job.target,
      requestedBy: job.requestedBy,
      startedAt: job.startedAt.toISOString(),
      completedAt: completedAt.toISOString(),
      method: job.keys ? "crypto-shredding" : "deletion",
      ...(job.keys && { keys: job.keys }),
      deleted: nonZero(job.deleted),
      redacted: nonZero(job.redacted),
      pending,
      notes,
      hashAlgorithm: "sha256-canonical-json",
    };
    return { ...body, hash: canonicalHash(body) };
  }
}

/** Checks a kept receipt: true when its hash is the hash of the rest. */
export function verifyReceipt(receipt: DeletionReceipt): boolean {
  const { hash, ...body } = receipt;
  return canonicalHash(body) === hash;
}

function targetIds(target: DataTarget): Record<string, string | null> {
  if (target.kind === "conversation") return { conversationId: target.conversationId };
  return target.kind === "user" ? { issuer: target.issuer, tenant: target.tenant, subject: target.subject } : { issuer: target.issuer, tenant: target.tenant };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function prefixed(field: string, counts: Counts): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).flatMap(([name, n]) => (n > 0 ? [[`${field}.${name}`, n]] : [])));
}

function nonZero(counts: Counts): Counts {
  return Object.fromEntries(
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}
