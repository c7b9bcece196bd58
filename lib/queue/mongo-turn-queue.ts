import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db } from "mongodb";
import { DEFAULT_LEASE_TTL_MS } from "../config/database-config.js";
import { DEFAULT_TURN_MAX_RECEIVES } from "../config/deployment-config.js";
import { MESSAGING_SYSTEMS, withConsumerSpan, withProducerSpan } from "../observability/tracing.js";
import { COLLECTIONS } from "../store/collections.js";
import type { InProcessJobHandler } from "./in-process-turn-queue.js";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import type { TurnJob } from "./turn-job.js";
import { turnJobDeduplicationId, turnJobGroupId, type TurnQueue } from "./turn-queue.js";

/** Deliveries processed at once, as the worker's reserved concurrency caps them in AWS. */
export const DEFAULT_MONGO_QUEUE_CONCURRENCY = 4;
/** How often an idle consumer looks for a visible job (an enqueue in this process wakes it at once). */
export const DEFAULT_MONGO_QUEUE_POLL_MS = 250;
/** How long a job's deduplication id is remembered after it is done, as SQS FIFO's five-minute window. */
export const DEFAULT_DEDUPLICATION_WINDOW_MS = 300_000;
/** Heartbeats per visibility timeout while a delivery is processed: two can be missed before it lapses. */
const HEARTBEATS_PER_VISIBILITY = 3;
const DUPLICATE_KEY = 11000;
/** The queue hop's spans (lib/observability/tracing.ts). */
const HOP = { system: MESSAGING_SYSTEMS.mongodb };

/** `ready`: waits for `visibleAt`; `in_flight`: delivered, until done or `visibleAt` lapses (redelivered); `dead`: out of receives (dead-letter). */
export const TURN_JOB_STATUSES = ["ready", "in_flight", "done", "dead"] as const;
export type TurnJobStatus = (typeof TURN_JOB_STATUSES)[number];

/** One job of the durable local queue, as stored. */
/** Jobs in the order they were enqueued (`seq` breaks ties within a millisecond), then by id. */
const DELIVERY_ORDER = { enqueuedAt: 1, seq: 1, _id: 1 } as const;
let enqueueSeq = 0;

export interface TurnJobDocument {
  /** The job's deduplication id (`turnJobDeduplicationId`): a second enqueue of it within the window is dropped. */
  _id: string;
  /** One per conversation (`turnJobGroupId`): a group's jobs are delivered one at a time, in order. */
  group: string;
  job: TurnJob;
  status: TurnJobStatus;
  enqueuedAt: Date;
  /**
   * This process's enqueue order: two jobs of one conversation enqueued within the same millisecond
   * are delivered in the order they were sent, not by their ids. Absent on jobs of older versions.
   */
  seq?: number;
  /** `ready`: when it may be delivered; `in_flight`: when its delivery lapses unless its consumer beats. */
  visibleAt: Date;
  /** Deliveries so far, as SQS's `ApproximateReceiveCount`. */
  receiveCount: number;
  /** The current delivery's token: only its consumer may finish, retry or extend it. */
  receipt?: string;
  /** Done and dead jobs are removed after this (TTL index). */
  expiresAt?: Date;
}

export interface MongoTurnQueueOptions {
  /** Processes one delivery; a thrown error is reported and the delivery left to lapse (redelivered). */
  handle: InProcessJobHandler;
  /** Called with a handler's thrown error. Default: nothing. */
  onError?: (error: unknown, job: TurnJob) => void;
  /** Called with a job moved to the dead-letter status. Default: nothing. */
  onDeadLetter?: (job: TurnJob, receiveCount: number) => void;
  /**
   * How long a delivery is invisible to other consumers without a heartbeat; a crashed consumer's
   * job comes back after it. Default: {@link DEFAULT_LEASE_TTL_MS}.
   */
  visibilityTimeoutMs?: number;
  /** Deliveries before a job is dead-lettered instead of delivered again. Default: {@link DEFAULT_TURN_MAX_RECEIVES}. */
  maxReceives?: number;
  /** Default: {@link DEFAULT_MONGO_QUEUE_CONCURRENCY}. */
  concurrency?: number;
  /** Default: {@link DEFAULT_MONGO_QUEUE_POLL_MS}. */
  pollMs?: number;
  /** Default: {@link DEFAULT_DEDUPLICATION_WINDOW_MS}. */
  deduplicationWindowMs?: number;
  /**
   * Default: jobs stored clear (`CLEAR_FIELDS`). A job's `content` (the user's text) and `edits` are encrypted under its
   * owner's tenant keys (docs/security.md, "Contents at rest").
   */
  cipher?: ContentCipher;
}

const contentRef = (jobId: string): FieldRef => ({ collection: COLLECTIONS.turnJobs, id: jobId, field: "job.content" });
/** Where a job's edited arguments (handed over by a webhook: `TurnJob.edits`) are encrypted. */
const editsRef = (jobId: string): FieldRef => ({ collection: COLLECTIONS.turnJobs, id: jobId, field: "job.edits" });
const tenantOfJob = (job: TurnJob) => ({ issuer: job.owner.issuer, tenant: job.owner.tenant });

/**
 * The turn queue of the local server, durable in MongoDB like the rest of the state: what SQS
 * FIFO gives the worker in AWS, so a crashed server recovers what the queue would (docs/recovery.md).
 * Deduplication by the job's deduplication id, one delivery at a time per group in enqueue order,
 * a visibility timeout extended by a heartbeat while a delivery runs (a dead consumer's job is
 * delivered again once it lapses), a receive count, and a dead-letter status after
 * `maxReceives` deliveries.
 */
export class MongoTurnQueue implements TurnQueue {
  readonly collection: Collection<TurnJobDocument>;
  private readonly visibilityMs: number;
  private readonly maxReceives: number;
  private readonly concurrency: number;
  private readonly pollMs: number;
  private readonly windowMs: number;
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private pollAgain = false;
  private stopped = true;

  constructor(
    db: Db,
    private readonly options: MongoTurnQueueOptions,
  ) {
    this.collection = db.collection<TurnJobDocument>(COLLECTIONS.turnJobs);
    this.visibilityMs = options.visibilityTimeoutMs ?? DEFAULT_LEASE_TTL_MS;
    this.maxReceives = options.maxReceives ?? DEFAULT_TURN_MAX_RECEIVES;
    this.concurrency = options.concurrency ?? DEFAULT_MONGO_QUEUE_CONCURRENCY;
    this.pollMs = options.pollMs ?? DEFAULT_MONGO_QUEUE_POLL_MS;
    this.windowMs = options.deduplicationWindowMs ?? DEFAULT_DEDUPLICATION_WINDOW_MS;
  }

  /** The indexes: visible jobs by age, a group's head, the TTL of finished ones, and a conversation's jobs. Idempotent. */
  async setup(): Promise<void> {
    await this.collection.createIndex({ status: 1, visibleAt: 1, enqueuedAt: 1 }, { name: "visible_jobs" });
    await this.collection.createIndex({ group: 1, status: 1, enqueuedAt: 1 }, { name: "group_jobs" });
    await this.collection.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, name: "expiresAt_ttl" });
    // Deleting or erasing a conversation removes its jobs (docs/data-lifecycle.md).
    await this.collection.createIndex({ "job.conversationKey": 1 }, { name: "conversation_key" });
  }

  async enqueue(job: TurnJob, now = new Date()): Promise<void> {
    const inserted = await withProducerSpan(HOP, (carrier) => this.insert(carrier ? { ...job, trace: carrier } : job, now));
    if (inserted && !this.stopped) this.poll();
  }

  /** Inserts the job; false when its deduplication id is already there (dropped, as SQS drops it). */
  private async insert(job: TurnJob, now: Date): Promise<boolean> {
    const _id = turnJobDeduplicationId(job);
    const cipher = this.options.cipher ?? CLEAR_FIELDS;
    const content = (await cipher.sealJsonFor(tenantOfJob(job), contentRef(_id), job.content)) as string;
    const edits = job.edits && ((await cipher.sealJsonFor(tenantOfJob(job), editsRef(_id), job.edits)) as TurnJob["edits"]);
    const doc: TurnJobDocument = {
      _id,
      group: turnJobGroupId(job),
      job: { ...job, content, ...(edits && { edits }) },
      status: "ready",
      enqueuedAt: now,
      seq: ++enqueueSeq,
      visibleAt: now,
      receiveCount: 0,
    };
    try {
      await this.collection.insertOne(doc);
      return true;
    } catch (error) {
      // The same deduplication id within the window: dropped, as SQS drops it.
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      return false;
    }
  }

  /** Starts consuming: jobs left in flight by a crashed process come back once their visibility lapses. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.timer = setInterval(() => this.poll(), this.pollMs).unref();
    this.poll();
  }

  /** Stops taking deliveries and waits for those being processed; jobs not done stay in the queue for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.polling;
    await Promise.all([...this.inFlight]);
  }

  /** Resolves once no job is waiting or in flight (tests, shutdown); a job waiting for its retry delay is waited for. */
  async drain(): Promise<void> {
    for (;;) {
      await Promise.all([...this.inFlight]);
      const pending = await this.collection.countDocuments({ status: { $in: ["ready", "in_flight"] } });
      if (pending === 0 && this.inFlight.size === 0) return;
      this.poll();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /**
   * Takes the next visible job for this consumer, or undefined: the oldest visible job that
   * heads its group (no earlier job of the group is waiting or in flight). One past its
   * receives is dead-lettered instead.
   */
  async receive(now = new Date()): Promise<{ doc: TurnJobDocument; receipt: string } | undefined> {
    const candidates = await this.collection
      .find({ status: { $in: ["ready", "in_flight"] }, visibleAt: { $lte: now } })
      .sort(DELIVERY_ORDER)
      .limit(20)
      .toArray();
    for (const candidate of candidates) {
      const head = await this.collection
        .find({ group: candidate.group, status: { $in: ["ready", "in_flight"] } })
        .sort(DELIVERY_ORDER)
        .limit(1)
        .next();
      if (head?._id !== candidate._id) continue;
      const taken = { _id: candidate._id, status: candidate.status, receiveCount: candidate.receiveCount, visibleAt: { $lte: now } };
      if (candidate.receiveCount >= this.maxReceives) {
        const dead = await this.collection.updateOne(taken, {
          $set: { status: "dead", expiresAt: new Date(now.getTime() + this.windowMs) },
          $unset: { receipt: "" },
        });
        if (dead.modifiedCount === 1) this.options.onDeadLetter?.(candidate.job, candidate.receiveCount);
        continue;
      }
      const receipt = randomUUID();
      const doc = await this.collection.findOneAndUpdate(
        taken,
        { $set: { status: "in_flight", receipt, visibleAt: new Date(now.getTime() + this.visibilityMs) }, $inc: { receiveCount: 1 } },
        { returnDocument: "after" },
      );
      if (doc) return { doc, receipt };
    }
    return undefined;
  }

  /** The delivery is done: the job leaves the queue (its id remembered for the deduplication window). */
  async complete(id: string, receipt: string, now = new Date()): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: id, receipt },
      { $set: { status: "done", expiresAt: new Date(now.getTime() + this.windowMs) }, $unset: { receipt: "" } },
    );
    return result.modifiedCount === 1;
  }

  /** Delivers the job again after `delaySeconds` instead of after the visibility timeout (SqsTurnQueue.retryAfter). */
  async retryAfter(id: string, receipt: string, delaySeconds: number, now = new Date()): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: id, receipt },
      { $set: { status: "ready", visibleAt: new Date(now.getTime() + Math.max(0, delaySeconds) * 1000) }, $unset: { receipt: "" } },
    );
    return result.modifiedCount === 1;
  }

  /** Keeps a delivery invisible while it is processed; false once it lapsed and was taken again. */
  async extend(id: string, receipt: string, now = new Date()): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: id, receipt, status: "in_flight" },
      { $set: { visibleAt: new Date(now.getTime() + this.visibilityMs) } },
    );
    return result.matchedCount === 1;
  }

  /** Looks for visible jobs while slots are free; a call while one runs makes it look once more. */
  private poll(): void {
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = (async () => {
      do {
        this.pollAgain = false;
        while (!this.stopped && this.inFlight.size < this.concurrency) {
          const delivery = await this.receive().catch(() => undefined);
          if (!delivery) break;
          const run = this.process(delivery.doc, delivery.receipt).finally(() => {
            this.inFlight.delete(run);
            if (!this.stopped) this.poll();
          });
          this.inFlight.add(run);
        }
      } while (this.pollAgain && !this.stopped);
    })().finally(() => {
      this.polling = undefined;
    });
  }

  private async process(doc: TurnJobDocument, receipt: string): Promise<void> {
    const beat = setInterval(() => void this.extend(doc._id, receipt).catch(() => undefined), Math.floor(this.visibilityMs / HEARTBEATS_PER_VISIBILITY));
    beat.unref();
    try {
      const cipher = this.options.cipher ?? CLEAR_FIELDS;
      const tenant = tenantOfJob(doc.job);
      const job = {
        ...doc.job,
        content: await cipher.openJsonFor<string>(tenant, contentRef(doc._id), doc.job.content),
        ...(doc.job.edits !== undefined && { edits: await cipher.openJsonFor<TurnJob["edits"]>(tenant, editsRef(doc._id), doc.job.edits) }),
      };
      const outcome = await withConsumerSpan(HOP, doc.job.trace, () => this.options.handle(job, doc.receiveCount));
      if (outcome) await this.retryAfter(doc._id, receipt, outcome.retryAfterSeconds);
      else await this.complete(doc._id, receipt);
    } catch (error) {
      // Left in flight: delivered again once its visibility lapses, as SQS does with a failed message.
      this.options.onError?.(error, doc.job);
    } finally {
      clearInterval(beat);
    }
  }
}
