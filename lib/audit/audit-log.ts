import { MongoServerError, type Collection, type Db } from "mongodb";
import { ConflictError } from "../errors.js";
import type { StructuredLogger } from "../logger.js";
import { COLLECTIONS } from "../store/collections.js";
import { canonicalHash, canonicalJson } from "./canonical-json.js";

/** What an audit record says was done. Reads, exports and erasures of data; admin and member changes; decisions; sign-ins. */
export const AUDIT_ACTIONS = [
  "conversation.read",
  "conversation.state.read",
  "conversation.archive.read",
  "conversation.inspect",
  "export",
  "erasure",
  "limits.set",
  "mcp_server.put",
  "mcp_server.delete",
  "approval.decide",
  "conversation.member.add",
  "conversation.member.remove",
  "sign_in.mcp",
  "sign_in.local_token",
  /** A tenant's content key rotated (resource: the new key's id; never key material). */
  "key.rotate",
  /** A tenant's content keys destroyed (resource: the key ids; detail: when the shred is final). */
  "key.shred",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who did it: a principal of an issuer (`api`, `slack`, `teams`), or an operator at the command line (`cli`). */
export interface AuditActor {
  issuer: string;
  tenant: string | null;
  subject: string;
}

/** Whose chain a record joins: the tenant whose data or settings it concerns. */
export interface AuditTenant {
  issuer: string;
  tenant: string | null;
}

/** One thing done, as a caller reports it: ids and settings, never message contents. */
export interface AuditEntry {
  action: AuditAction;
  actor: AuditActor;
  tenant: AuditTenant;
  /** The ids of what was acted on (conversation, turn, approval, server name, erasure id). */
  resource: Record<string, string | null>;
  /** Where the request came from: `api`, `slack`, `teams` or `cli`. */
  channel: string;
  requestId?: string;
  /** An admin change's value before and after (limits, an MCP server entry); null when there was none. */
  before?: unknown;
  after?: unknown;
  /** Numbers and hashes about the action (an erasure's counts and receipt hash). */
  detail?: Record<string, unknown>;
}

/** A record as stored: the entry, its place in its tenant's chain, and the hashes that link it. */
export interface AuditRecord extends AuditEntry {
  /** `${chain}:${seq}`. */
  _id: string;
  /** The tenant as JSON (`["api","acme"]`): one chain per tenant. */
  chain: string;
  /** 1, 2, 3… within the chain; unique with the chain, so two writers cannot both append after one record. */
  seq: number;
  at: Date;
  /** The hash of the record before it in the chain ({@link GENESIS_HASH} for the first). */
  prevHash: string;
  /** SHA-256 over the canonical JSON of every field above (`recordHash`). */
  hash: string;
  /** When the TTL index removes it (`AUDIT_RETENTION_DAYS`). */
  expiresAt: Date;
}

/** The `prevHash` of a chain's first record. */
export const GENESIS_HASH = "0".repeat(64);
/**
 * Appends tried when another writer took the next place in the chain each time: one writer wins
 * each round, so as many as the writers of one tenant at once, with a jittered pause between.
 */
const APPEND_ATTEMPTS = 64;
/** Most milliseconds of the pause before another attempt (a random part of it, growing with the attempts). */
const APPEND_BACKOFF_MS = 20;
const DUPLICATE_KEY = 11000;
const DAY_MS = 86_400_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const chainOf = (tenant: AuditTenant): string => JSON.stringify([tenant.issuer, tenant.tenant]);

/** What a record's hash covers: everything but the hash itself, its `_id` and its expiry. */
export function recordHash(record: Omit<AuditRecord, "_id" | "hash" | "expiresAt">): string {
  const { chain, seq, at, prevHash, action, actor, tenant, resource, channel, requestId, before, after, detail } = record;
  return canonicalHash({ chain, seq, at, prevHash, action, actor, tenant, resource, channel, requestId, before, after, detail });
}

/** What `verify` found wrong with a chain. */
export interface AuditProblem {
  chain: string;
  seq: number;
  reason: "hash_mismatch" | "broken_link" | "sequence_gap";
}

export interface AuditVerification {
  chains: number;
  records: number;
  problems: AuditProblem[];
}

export interface AuditLogOptions {
  /** Days a record is kept. Default: `DEFAULT_AUDIT_RETENTION_DAYS` of lib/config/lifecycle-config.ts, as the caller passes it. */
  retentionDays: number;
  /** Each record is also a structured log line (`audit`), for CloudWatch Logs in AWS. Default: none. */
  logger?: StructuredLogger;
  now?: () => Date;
}

/**
 * The audit log (docs/data-lifecycle.md, "Audit log"): append-only records of who read, exported,
 * erased or changed what, one hash chain per tenant. Each record carries the hash of the one
 * before it and a sequence number unique in its chain, so an altered, removed or inserted record
 * breaks the chain (`verify`), and two writers racing for the same place cannot fork it: one
 * insert fails on the unique index and tries again after the winner.
 */
export class AuditLog {
  readonly collection: Collection<AuditRecord>;
  private readonly retentionMs: number;
  private readonly now: () => Date;

  constructor(
    db: Db,
    private readonly options: AuditLogOptions,
  ) {
    this.collection = db.collection<AuditRecord>(COLLECTIONS.auditLog);
    this.retentionMs = options.retentionDays * DAY_MS;
    this.now = options.now ?? (() => new Date());
  }

  /** The chain's unique order and the TTL; idempotent, run once at start-up. */
  async setup(): Promise<void> {
    await this.collection.createIndex({ chain: 1, seq: 1 }, { name: "chain_seq", unique: true });
    await this.collection.createIndex({ expiresAt: 1 }, { name: "audit_ttl", expireAfterSeconds: 0 });
  }

  /** Appends the entry at the end of its tenant's chain and returns the record. */
  async append(entry: AuditEntry): Promise<AuditRecord> {
    const chain = chainOf(entry.tenant);
    // Stored as its JSON: what is hashed is what is read back (no undefined, no Date inside values).
    const plain = JSON.parse(canonicalJson(entry)) as AuditEntry;
    for (let attempt = 1; ; attempt++) {
      const last = await this.collection.find({ chain }).sort({ seq: -1 }).limit(1).next();
      const at = this.now();
      const base = { ...plain, chain, seq: (last?.seq ?? 0) + 1, at, prevHash: last?.hash ?? GENESIS_HASH };
      const record: AuditRecord = { _id: `${chain}:${base.seq}`, ...base, hash: recordHash(base), expiresAt: new Date(at.getTime() + this.retentionMs) };
      try {
        await this.collection.insertOne(record);
      } catch (error) {
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY && attempt < APPEND_ATTEMPTS) {
          await sleep(Math.random() * Math.min(APPEND_BACKOFF_MS, attempt * 2));
          continue;
        }
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) {
          throw new ConflictError("the audit log is busy: another record took its place each time", 1, { cause: error });
        }
        throw error;
      }
      this.options.logger?.info("audit", {
        action: record.action,
        chain,
        seq: record.seq,
        hash: record.hash,
        actor: record.actor,
        resource: record.resource,
        channel: record.channel,
        requestId: record.requestId,
      });
      return record;
    }
  }

  /** A tenant's records in chain order after `afterSeq`, at most `limit`. */
  async list(tenant: AuditTenant, options: { afterSeq?: number; limit: number }): Promise<AuditRecord[]> {
    return this.collection
      .find({ chain: chainOf(tenant), seq: { $gt: options.afterSeq ?? 0 } })
      .sort({ seq: 1 })
      .limit(options.limit)
      .toArray();
  }

  /**
   * Checks every chain (or one tenant's): each record's hash over its fields, its link to the one
   * before, and no gap in the sequence. A chain's first kept record is taken as it is: the records
   * before it expired (`AUDIT_RETENTION_DAYS`), which removes a chain's oldest records only.
   */
  async verify(tenant?: AuditTenant): Promise<AuditVerification> {
    const filter = tenant ? { chain: chainOf(tenant) } : {};
    const problems: AuditProblem[] = [];
    let records = 0;
    let chains = 0;
    let previous: AuditRecord | undefined;
    for await (const record of this.collection.find(filter).sort({ chain: 1, seq: 1 })) {
      records += 1;
      const sameChain = previous?.chain === record.chain;
      if (!sameChain) chains += 1;
      const { _id, hash, expiresAt, ...fields } = record;
      if (recordHash(fields) !== hash) problems.push({ chain: record.chain, seq: record.seq, reason: "hash_mismatch" });
      if (sameChain && previous) {
        if (record.seq !== previous.seq + 1) problems.push({ chain: record.chain, seq: record.seq, reason: "sequence_gap" });
        else if (record.prevHash !== previous.hash) problems.push({ chain: record.chain, seq: record.seq, reason: "broken_link" });
      } else if (record.seq === 1 && record.prevHash !== GENESIS_HASH) {
        problems.push({ chain: record.chain, seq: record.seq, reason: "broken_link" });
      }
      previous = record;
    }
    return { chains, records, problems };
  }
}
