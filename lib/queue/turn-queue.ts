import { createHash } from "node:crypto";
import { derivedUuid } from "../derived-id.js";
import type { TurnJob } from "./turn-job.js";

/** Hands turns to the worker: SQS FIFO in AWS, in-process in local mode. */
export interface TurnQueue {
  enqueue(job: TurnJob): Promise<void>;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * The FIFO message group of a job: one per conversation, so its turns run one after another.
 * Hashed because channel keys (Teams conversation ids) can exceed SQS's 128 characters.
 */
export function turnJobGroupId(job: TurnJob): string {
  return sha256(`${job.channel}:${job.conversationKey}`);
}

/**
 * The FIFO deduplication id: the delivered event, so a channel's retry is dropped by SQS as well;
 * a resuming job adds its decisions, so it is not taken for the event's first delivery.
 */
export function turnJobDeduplicationId(job: TurnJob): string {
  return sha256(`${job.channel}:${job.dedupeId}${job.resume === undefined ? "" : `:resume:${job.resume}`}`);
}

/**
 * The turn id a job runs under. An API job carries the API's turn id (its dedupe id); a channel
 * job gets a UUID-shaped id derived from its event, so every redelivery of the message names
 * the same turn and the runner resumes or returns it instead of running it again.
 */
export function turnIdForJob(job: TurnJob): string {
  if (job.channel === "api") return job.dedupeId;
  return derivedUuid(`turn:${job.channel}:${job.dedupeId}`, 5);
}
