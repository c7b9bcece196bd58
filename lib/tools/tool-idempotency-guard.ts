import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyRecordStatus,
  IdempotencyValidationError,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import type { Collection } from "mongodb";
import type { ContentCipher } from "../crypto/content-cipher.js";
import { DEFAULT_TOOL_IDEMPOTENCY_TTL_SECONDS, DEFAULT_TOOL_TIMEOUT_MS } from "../config/tools-config.js";
import { ToolError } from "../errors.js";
import { IdempotencyPersistenceLayer, refusalOrError, type IdempotencyDocument } from "../store/idempotency-persistence-layer.js";
import type { ToolContext, ToolDefinition } from "./tool.js";

/** Prefix of every tool side-effect key in the `idempotency` collection (the API uses its own). */
export const DEFAULT_TOOL_IDEMPOTENCY_KEY_PREFIX = "threadwise.tool";
/** How often a call that finds its twin in progress looks again for the twin's result. */
export const DEFAULT_IN_PROGRESS_POLL_MS = 100;

export interface ToolIdempotencyGuardOptions {
  collection: Collection<IdempotencyDocument>;
  /** What a stored result and the arguments' hash are sealed with (the database's cipher). Default: stored clear. */
  cipher?: ContentCipher;
  /** Default: `DEFAULT_TOOL_IDEMPOTENCY_KEY_PREFIX`. */
  keyPrefix?: string;
  /** How long a completed effect answers retries, in seconds. Default: `DEFAULT_TOOL_IDEMPOTENCY_TTL_SECONDS`. */
  expiresAfterSeconds?: number;
  /**
   * After this long an in-progress record is presumed abandoned (its runner crashed) and may be
   * taken over; it should be at least the tool timeout. Default: `DEFAULT_TOOL_TIMEOUT_MS`.
   */
  inProgressTimeoutMs?: number;
  /** Default: `DEFAULT_IN_PROGRESS_POLL_MS`. */
  pollIntervalMs?: number;
}

/** What is hashed: the key names the call, the rest must match on a retry. */
interface GuardedCall {
  key: string;
  tool: string;
  args: unknown;
}

/**
 * What the idempotency record of one call says: `completed` with the result the effect returned,
 * `running` while its runner may still be at it, `abandoned` when it was in progress past its
 * in-progress expiry (its runner died: whether the effect happened is unknown).
 */
export type RecordedToolCall = { status: "completed"; result: string } | { status: "running" } | { status: "abandoned" };

interface Deadline {
  getRemainingTimeInMillis(): number;
}

/**
 * Runs a side-effect tool at most once per `conversationId:toolCallId`, through Powertools
 * `makeIdempotent` and the MongoDB persistence layer. A retry of a completed call returns the
 * stored result without repeating the effect; a call that races a twin still in progress waits
 * for the twin's result; a retry with different arguments under the same id is refused.
 */
export class ToolIdempotencyGuard {
  readonly #idempotent: (call: GuardedCall, deadline: Deadline, tool: ToolDefinition, ctx: ToolContext) => Promise<string>;
  readonly #persistence: IdempotencyPersistenceLayer;
  readonly #deadline: Deadline;
  readonly #pollIntervalMs: number;

  constructor(options: ToolIdempotencyGuardOptions) {
    this.#persistence = new IdempotencyPersistenceLayer({ collection: options.collection, cipher: options.cipher });
    const inProgressTimeoutMs = options.inProgressTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    // Powertools reads the in-progress expiry from a Lambda-style context; a tool call has its own budget.
    this.#deadline = { getRemainingTimeInMillis: () => inProgressTimeoutMs };
    this.#pollIntervalMs = options.pollIntervalMs ?? DEFAULT_IN_PROGRESS_POLL_MS;
    const keyPrefix = options.keyPrefix ?? DEFAULT_TOOL_IDEMPOTENCY_KEY_PREFIX;
    const config = new IdempotencyConfig({
      eventKeyJmesPath: "key",
      payloadValidationJmesPath: "[tool, args]",
      throwOnNoIdempotencyKey: true,
      expiresAfterSeconds: options.expiresAfterSeconds ?? DEFAULT_TOOL_IDEMPOTENCY_TTL_SECONDS,
    });
    // Configured here too (Powertools configures a layer once), so `recorded` hashes keys as the guarded calls do before any ran.
    this.#persistence.configure({ config, keyPrefix });
    const idempotent = makeIdempotent((call: GuardedCall, _deadline: Deadline, tool: ToolDefinition, ctx: ToolContext) => tool.run(call.args, ctx), {
      persistenceStore: this.#persistence,
      keyPrefix,
      config,
    });
    // The record's conversation and caller are stored with it from its first write, so deletion and erasure find it
    // (docs/data-lifecycle.md), and the conversation's tenant seals its result and the arguments' hash (docs/security.md).
    this.#idempotent = (call, deadline, tool, ctx) =>
      this.#persistence.withTags(call, { conversationId: ctx.conversationId, owner: ctx.caller.principal }, () => idempotent(call, deadline, tool, ctx));
  }

  /** Idempotency key of a tool call, before hashing. */
  static keyOf(ctx: Pick<ToolContext, "conversationId" | "toolCallId">): string {
    return `${ctx.conversationId}:${ctx.toolCallId}`;
  }

  /** Creates the persistence layer's indexes; idempotent, run once at start-up. */
  async setup(): Promise<void> {
    await this.#persistence.setup();
  }

  /** What the call's record says, if it has one (docs/recovery.md: a tool call left without its result). */
  async recorded(ctx: Pick<ToolContext, "conversationId" | "toolCallId">, now = Date.now()): Promise<RecordedToolCall | undefined> {
    const doc = await this.#persistence.findByKey({ key: ToolIdempotencyGuard.keyOf(ctx) });
    if (!doc || doc.expiryTimestamp * 1000 < now) return undefined;
    if (doc.status === IdempotencyRecordStatus.COMPLETED) {
      const text = await this.#persistence.openData(doc);
      const data: unknown = text === undefined ? "" : JSON.parse(text);
      return { status: "completed", result: typeof data === "string" ? data : JSON.stringify(data) };
    }
    if (doc.inProgressExpiryTimestamp !== undefined && doc.inProgressExpiryTimestamp < now) return { status: "abandoned" };
    return { status: "running" };
  }

  /**
   * Runs `tool` with validated `args` once for this call id; returns the (first) result. A call
   * whose earlier run was abandoned in progress (its process died while the tool ran) is not run
   * again: whether its effect happened is unknown, and the ToolError tells the model so.
   */
  async run(tool: ToolDefinition, args: unknown, ctx: ToolContext): Promise<string> {
    const call: GuardedCall = { key: ToolIdempotencyGuard.keyOf(ctx), tool: tool.name, args };
    for (;;) {
      if ((await this.recorded(ctx))?.status === "abandoned") {
        throw new ToolError(
          `tool call ${ctx.toolCallId} was interrupted while it ran; whether it took effect is unknown, so it was not run again. ` +
            "Tell the user, and call it again only if they ask.",
          tool.name,
        );
      }
      try {
        return await this.#idempotent(call, this.#deadline, tool, ctx);
      } catch (error) {
        if (error instanceof IdempotencyValidationError) {
          throw new ToolError(`tool call ${ctx.toolCallId} was already made with different arguments; use a new call`, tool.name, { cause: error });
        }
        if (!(error instanceof IdempotencyAlreadyInProgressError)) throw refusalOrError(error);
        if (ctx.signal?.aborted) throw error;
        await sleep(this.#pollIntervalMs, ctx.signal);
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
