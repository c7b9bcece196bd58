import type { AuditActor, AuditLog } from "../audit/audit-log.js";
import type { TenantRef } from "../crypto/tenant-keys.js";
import type { StructuredLogger } from "../logger.js";
import type { ResealJobDocument, ResealOutcome, ResealRunOptions } from "../store/content-resealer.js";
import type { ThreadwiseDatabase } from "../store/database.js";

const DAY_MS = 86_400_000;

/** Who a scheduled rotation's audit record names: the deployment's key maintenance, not a person. */
export const KEY_ROTATION_SCHEDULE_ACTOR: AuditActor = { issuer: "system", tenant: null, subject: "key-rotation-schedule" };

/** Who asked for a rotation, as the audit record names it. */
export interface RotationRequest {
  actor: AuditActor;
  /** `api`, `cli` or `schedule`. */
  channel: string;
  requestId?: string;
}

/** A tenant's re-encryption as the admin API and the command line show it: no document ids (the walk crosses every tenant's). */
export interface ReencryptionView {
  status: ResealJobDocument["status"];
  keyId: string;
  rotatedAt: string;
  /** When every process seals under the new key; re-encryption starts then. */
  effectiveAt: string;
  /** Where the pass is: the walker and collection of its last batch; null before the first. */
  position: { walker: string; collection: string } | null;
  counts: ResealJobDocument["counts"];
  startedAt: string | null;
  updatedAt: string;
  finishedAt: string | null;
}

/** What a rotation answers. */
export interface RotationResult {
  tenant: TenantRef;
  keyId: string;
  rotatedAt: string;
  /** From when every process seals under the new key: the rotation plus `CONTENT_DATA_KEY_MAX_AGE_SECONDS`. */
  effectiveAt: string;
  reencryption: ReencryptionView;
}

/** What one run of key maintenance did. */
export interface KeyMaintenanceResult {
  rotated: RotationResult[];
  reencrypted: { tenant: TenantRef; status: ResealOutcome["status"] }[];
}

export interface KeyRotationOptions {
  database: ThreadwiseDatabase;
  audit: AuditLog;
  /** `CONTENT_KEY_ROTATION_DAYS`: a tenant's key older than this is rotated by `maintain`; 0 never. */
  rotationDays: number;
  /** Default: none. */
  logger?: StructuredLogger;
}

export function reencryptionView(job: ResealJobDocument): ReencryptionView {
  return {
    status: job.status,
    keyId: job.keyId,
    rotatedAt: job.rotatedAt.toISOString(),
    effectiveAt: job.effectiveAt.toISOString(),
    position: job.cursor ? { walker: job.cursor.walker, collection: job.cursor.collection } : null,
    counts: job.counts,
    startedAt: job.startedAt?.toISOString() ?? null,
    updatedAt: job.updatedAt.toISOString(),
    finishedAt: job.finishedAt?.toISOString() ?? null,
  };
}

/**
 * Key rotation (docs/security.md, "Rotation"): on demand (the admin API, `npm run keys:rotate`) and
 * on a schedule (`maintain`, run by the worker's schedule in AWS and a timer locally). Every rotation
 * is recorded in the audit log (`key.rotate`: the new key's id, never key material) and schedules
 * the tenant's re-encryption, which `maintain` (or `npm run keys:reencrypt`) runs once the new key
 * has reached every process. Earlier keys are kept: they still open backups taken before.
 */
export class KeyRotation {
  readonly #database: ThreadwiseDatabase;
  readonly #audit: AuditLog;
  readonly #rotationDays: number;
  readonly #logger: StructuredLogger | undefined;

  constructor(options: KeyRotationOptions) {
    this.#database = options.database;
    this.#audit = options.audit;
    this.#rotationDays = options.rotationDays;
    this.#logger = options.logger;
  }

  /**
   * A new key for the tenant, recorded in its audit chain, its re-encryption scheduled.
   * @throws ContentEncryptionOffError when contents are stored clear (nothing is changed).
   */
  async rotate(tenant: TenantRef, by: RotationRequest, now = new Date()): Promise<RotationResult> {
    const rotated = await this.#database.rotateTenantKey(tenant.issuer, tenant.tenant, now);
    await this.#audit.append({
      action: "key.rotate",
      actor: by.actor,
      tenant: { issuer: tenant.issuer, tenant: tenant.tenant },
      resource: { keyId: rotated.keyId },
      channel: by.channel,
      ...(by.requestId !== undefined && { requestId: by.requestId }),
      detail: { effectiveAt: rotated.effectiveAt.toISOString(), keySource: this.#database.cipher.keySource },
    });
    this.#logger?.info("content key rotated", { issuer: tenant.issuer, channel: by.channel });
    return {
      tenant: { issuer: tenant.issuer, tenant: tenant.tenant },
      keyId: rotated.keyId,
      rotatedAt: rotated.rotatedAt.toISOString(),
      effectiveAt: rotated.effectiveAt.toISOString(),
      reencryption: reencryptionView(rotated.job),
    };
  }

  /** The tenant's latest rotation and its re-encryption; null when its key never rotated. */
  async status(tenant: TenantRef): Promise<ReencryptionView | null> {
    const job = await this.#database.reseals.status(tenant);
    return job ? reencryptionView(job) : null;
  }

  /** Rotates every tenant whose current key is `CONTENT_KEY_ROTATION_DAYS` old or older; none when that is 0. */
  async rotateDue(now = new Date()): Promise<RotationResult[]> {
    if (this.#rotationDays <= 0) return [];
    const before = now.getTime() - this.#rotationDays * DAY_MS;
    const due = (await this.#database.cipher.currentKeys()).filter((k) => k.createdAt.getTime() <= before);
    const rotated: RotationResult[] = [];
    for (const { tenant } of due) rotated.push(await this.rotate(tenant, { actor: KEY_ROTATION_SCHEDULE_ACTOR, channel: "schedule" }, now));
    return rotated;
  }

  /** Re-encrypts the tenant now, from where its last run stopped (the command line's `keys:reencrypt`). */
  reencrypt(tenant: TenantRef, options: ResealRunOptions = {}): Promise<ResealOutcome> {
    return this.#database.reseals.run(tenant, options);
  }

  /** Key maintenance: the rotations due, then every re-encryption due, until `shouldStop`. */
  async maintain(options: ResealRunOptions = {}): Promise<KeyMaintenanceResult> {
    if (!this.#database.cipher.enabled) return { rotated: [], reencrypted: [] };
    const rotated = await this.rotateDue(options.now?.());
    const runs = await this.#database.reseals.runDue(options);
    return { rotated, reencrypted: runs.map((r) => ({ tenant: r.tenant, status: r.outcome.status })) };
  }
}
