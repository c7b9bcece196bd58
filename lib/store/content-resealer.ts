import { randomUUID } from "node:crypto";
import type { Binary, Collection, Db } from "mongodb";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import { type TenantRef, tenantKey } from "../crypto/tenant-keys.js";
import { COLLECTIONS } from "./collections.js";

/** Documents a walker reads in one batch, and after which it records its progress. */
export const DEFAULT_RESEAL_BATCH_SIZE = 200;
/** How long a run holds a tenant's re-encryption before another process may take it over (a run renews it after each batch). */
export const DEFAULT_RESEAL_LEASE_MS = 120_000;

/** Where a pass is: the walker, its collection and the last `_id` done there. */
export interface ResealCursor {
  walker: string;
  collection: string;
  lastId: unknown;
}

/** One batch a walker did: where it stopped and what it did there. */
export interface ResealBatch extends ResealCursor {
  /** Documents read (every tenant's; only the pass's tenant's are decrypted). */
  examined: number;
  /** Fields written under the current key. */
  resealed: number;
  /** Documents a concurrent write changed between the read and the re-seal (read again, or left to the write). */
  raced: number;
}

/** What a walker is handed: the tenant, where to resume, and the functions it re-seals and reports with. */
export interface ResealPass {
  readonly tenant: TenantRef;
  /** The key the pass seals under: the tenant's current one, checked when the run took the job. */
  readonly keyId: string;
  /** Where an earlier run stopped, when it stopped in this walker's collections; undefined: from the start. */
  readonly after: ResealCursor | undefined;
  readonly batchSize: number;
  /** Of these conversations, those the pass's tenant owns: the only ones whose documents a walker re-seals. */
  ownedByTenant(conversationIds: readonly string[]): Promise<ReadonlySet<string>>;
  /** The stored value sealed under the tenant's current key; undefined when it is already (nothing to write). */
  reseal(conversationId: string, ref: FieldRef, stored: unknown): Promise<Binary | undefined>;
  /** As `reseal`, for a record sealed under the tenant named directly. */
  resealFor(ref: FieldRef, stored: unknown): Promise<Binary | undefined>;
  /** Records the batch; false when the walker is to stop there (the run's time is up, or another rotation began). */
  onBatch(batch: ResealBatch): Promise<boolean>;
}

/**
 * What re-encryption walks (docs/security.md, "Rotation"): a set of collections whose sealed
 * values it re-seals in `_id` order, from `pass.after`, reporting each batch. Resolves true once
 * done, false when `onBatch` said stop. The store's content fields are one walker
 * (`CollectionResealWalker` over `ENCRYPTED_FIELDS`); another store (the checkpointer) plugs in its own.
 */
export interface ResealWalker {
  /** Unique among the walkers: where a pass stopped names it. */
  readonly name: string;
  reseal(pass: ResealPass): Promise<boolean>;
}

/** A tenant's re-encryption after a rotation, as stored: what key, which pass, where it is. */
export interface ResealJobDocument {
  /** `tenantKey(tenant)`. */
  _id: string;
  issuer: TenantRef["issuer"];
  tenant: string | null;
  /** The key every value is re-sealed under: the one the rotation made. */
  keyId: string;
  rotatedAt: Date;
  /**
   * When no process writes under an earlier key any more (the rotation and the data keys' age): a pass
   * must start after it to leave nothing behind, so none starts before.
   */
  effectiveAt: Date;
  status: "pending" | "running" | "done";
  /** The walker, collection and last `_id` done; null before the first batch. */
  cursor: ResealCursor | null;
  counts: { examined: number; resealed: number; raced: number };
  startedAt: Date | null;
  updatedAt: Date;
  finishedAt: Date | null;
  /** The run that holds the job, and until when. */
  lease: { runId: string; until: Date } | null;
}

/** What `run` did for a tenant. */
export type ResealOutcome =
  | { status: "done"; job: ResealJobDocument }
  | { status: "paused"; job: ResealJobDocument }
  | { status: "waiting"; startsAt: Date }
  | { status: "busy" }
  | { status: "none" };

export interface ContentResealerOptions {
  /** Default: {@link DEFAULT_RESEAL_BATCH_SIZE}. */
  batchSize?: number;
  /** Default: {@link DEFAULT_RESEAL_LEASE_MS}. */
  leaseMs?: number;
  /** Milliseconds a data key is reused (`CONTENT_DATA_KEY_MAX_AGE_SECONDS`): how long after a rotation a process may still seal under the old key. */
  dataKeyMaxAgeMs: number;
}

/** What a run may be told. */
export interface ResealRunOptions {
  /** Default: the system clock. */
  now?: () => Date;
  /** Asked after each batch: true stops the run there (a Lambda's time running out); the next run resumes. Default: never. */
  shouldStop?: () => boolean;
  /** Told each batch once it is recorded (the command line prints it). Default: none. */
  onBatch?: (batch: ResealBatch) => void;
}

/**
 * Background re-encryption after a rotation (docs/security.md, "Rotation"): one job per tenant in
 * `content_reseals`, made by the rotation, run by key maintenance (a schedule in AWS, a timer
 * locally) or at once from the command line. A run walks every walker in turn, records the cursor
 * after each batch, and holds a lease it renews there, so a run cut short (a timeout, a crash) is
 * resumed from its last batch by the next, and two runs never walk one tenant at once. Re-sealing
 * is idempotent: a value the current key sealed is left as it is.
 */
export class ContentResealer {
  readonly jobs: Collection<ResealJobDocument>;
  readonly #conversations: Collection<{ _id: string; owner?: TenantRef }>;
  readonly #cipher: ContentCipher;
  readonly #walkers: ResealWalker[];
  readonly #batchSize: number;
  readonly #leaseMs: number;
  readonly #dataKeyMaxAgeMs: number;

  constructor(db: Db, cipher: ContentCipher, walkers: readonly ResealWalker[], options: ContentResealerOptions) {
    this.jobs = db.collection<ResealJobDocument>(COLLECTIONS.contentReseals);
    this.#conversations = db.collection(COLLECTIONS.conversations);
    this.#cipher = cipher;
    this.#walkers = [...walkers];
    this.#batchSize = options.batchSize ?? DEFAULT_RESEAL_BATCH_SIZE;
    this.#leaseMs = options.leaseMs ?? DEFAULT_RESEAL_LEASE_MS;
    this.#dataKeyMaxAgeMs = options.dataKeyMaxAgeMs;
  }

  /** When a rotation at `rotatedAt` reaches every process: the rotation plus the data keys' age. */
  effectiveAt(rotatedAt: Date): Date {
    return new Date(rotatedAt.getTime() + this.#dataKeyMaxAgeMs);
  }

  /** Starts the tenant's re-encryption under `keyId` over, replacing any earlier one (a later rotation supersedes it). */
  async schedule(tenant: TenantRef, keyId: string, rotatedAt: Date): Promise<ResealJobDocument> {
    const job: ResealJobDocument = {
      _id: tenantKey(tenant),
      issuer: tenant.issuer,
      tenant: tenant.tenant,
      keyId,
      rotatedAt,
      effectiveAt: this.effectiveAt(rotatedAt),
      status: "pending",
      cursor: null,
      counts: { examined: 0, resealed: 0, raced: 0 },
      startedAt: null,
      updatedAt: rotatedAt,
      finishedAt: null,
      lease: null,
    };
    await this.jobs.replaceOne({ _id: job._id }, job, { upsert: true });
    return job;
  }

  /** The tenant's latest re-encryption, or null when its key never rotated. */
  status(tenant: TenantRef): Promise<ResealJobDocument | null> {
    return this.jobs.findOne({ _id: tenantKey(tenant) });
  }

  /** Runs every unfinished job whose rotation reached every process, one tenant after the other, until `shouldStop`. */
  async runDue(options: ResealRunOptions = {}): Promise<{ tenant: TenantRef; outcome: ResealOutcome }[]> {
    const now = options.now ?? (() => new Date());
    const due = await this.jobs.find({ status: { $in: ["pending", "running"] }, effectiveAt: { $lte: now() } }).toArray();
    const results: { tenant: TenantRef; outcome: ResealOutcome }[] = [];
    for (const job of due) {
      if (options.shouldStop?.()) break;
      const tenant = { issuer: job.issuer, tenant: job.tenant };
      results.push({ tenant, outcome: await this.run(tenant, options) });
    }
    return results;
  }

  /**
   * Runs the tenant's re-encryption from where it stopped until it is done or `shouldStop` says
   * stop. `waiting` before the rotation reached every process, `busy` while another run holds it,
   * `none` when there is nothing to do.
   */
  async run(tenant: TenantRef, options: ResealRunOptions = {}): Promise<ResealOutcome> {
    const now = options.now ?? (() => new Date());
    const id = tenantKey(tenant);
    const found = await this.jobs.findOne({ _id: id });
    if (!found || found.status === "done") return { status: "none" };
    if (found.effectiveAt.getTime() > now().getTime()) return { status: "waiting", startsAt: found.effectiveAt };
    const runId = randomUUID();
    const taken = await this.jobs.findOneAndUpdate(
      { _id: id, keyId: found.keyId, status: { $in: ["pending", "running"] }, $or: [{ lease: null }, { "lease.until": { $lt: now() } }] },
      {
        $set: { status: "running", lease: { runId, until: new Date(now().getTime() + this.#leaseMs) }, updatedAt: now(), startedAt: found.startedAt ?? now() },
      },
      { returnDocument: "after" },
    );
    if (!taken) return { status: "busy" };
    // This process's cached keyrings may predate the rotation (it ran elsewhere): read the current key again.
    const current = await this.#cipher.currentKey(tenant);
    if (current !== undefined && current !== taken.keyId) {
      // A later rotation whose job was not recorded (made around `rotateTenantKey`): re-sealing is under the current
      // key, from when it surely reached every process.
      const job = await this.schedule(tenant, current, now());
      return { status: "waiting", startsAt: job.effectiveAt };
    }
    const held = { _id: id, keyId: taken.keyId, "lease.runId": runId };
    let stopped = false;
    const pass = (after: ResealCursor | undefined): ResealPass => ({
      tenant,
      keyId: taken.keyId,
      after,
      batchSize: this.#batchSize,
      ownedByTenant: async (ids) => {
        if (ids.length === 0) return new Set();
        const owned = await this.#conversations
          .find({ _id: { $in: [...ids] }, "owner.issuer": tenant.issuer, "owner.tenant": tenant.tenant }, { projection: { _id: 1 } })
          .toArray();
        return new Set(owned.map((c) => c._id));
      },
      reseal: (conversationId, ref, stored) => this.#cipher.reseal(conversationId, ref, stored),
      resealFor: (ref, stored) => this.#cipher.resealFor(tenant, ref, stored),
      onBatch: async (batch) => {
        const { examined, resealed, raced, ...cursor } = batch;
        const { matchedCount } = await this.jobs.updateOne(held, {
          $set: { cursor, updatedAt: now(), "lease.until": new Date(now().getTime() + this.#leaseMs) },
          $inc: { "counts.examined": examined, "counts.resealed": resealed, "counts.raced": raced },
        });
        // The job was replaced (another rotation) or taken over after our lease ran out: stop, the holder goes on.
        if (matchedCount === 1) options.onBatch?.(batch);
        stopped = matchedCount === 0 || (options.shouldStop?.() ?? false);
        return !stopped;
      },
    });
    const startAt = taken.cursor ? this.#walkers.findIndex((w) => w.name === taken.cursor?.walker) : 0;
    for (const [i, walker] of this.#walkers.entries()) {
      if (i < startAt) continue;
      const finished = await walker.reseal(pass(i === startAt && taken.cursor ? taken.cursor : undefined));
      if (!finished) break;
    }
    if (stopped) {
      await this.jobs.updateOne(held, { $set: { lease: null, updatedAt: now() } });
      return { status: "paused", job: (await this.jobs.findOne({ _id: id })) as ResealJobDocument };
    }
    await this.jobs.updateOne(held, { $set: { status: "done", lease: null, finishedAt: now(), updatedAt: now() } });
    return { status: "done", job: (await this.jobs.findOne({ _id: id })) as ResealJobDocument };
  }
}
