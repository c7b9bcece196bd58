import { IdempotencyAlreadyInProgressError, IdempotencyConfig, IdempotencyValidationError, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import type { Collection } from "mongodb";
import type { ContentCipher } from "../crypto/content-cipher.js";
import { ConflictError, IdempotencyKeyReusedError } from "../errors.js";
import { DEFAULT_LEASE_TTL_MS } from "../config/database-config.js";
import { IdempotencyPersistenceLayer, refusalOrError, type IdempotencyDocument, type IdempotencyTags } from "../store/idempotency-persistence-layer.js";

/** Prefix of request keys in the `idempotency` collection (tool side effects use their own). */
export const DEFAULT_API_IDEMPOTENCY_KEY_PREFIX = "threadwise.api";
/** How long a repeated Idempotency-Key answers with the first response. */
export const DEFAULT_API_IDEMPOTENCY_TTL_S = 24 * 3600;

interface KeyedRequest {
  key: string;
  payload: string;
}

interface Deadline {
  getRemainingTimeInMillis(): number;
}

export interface IdempotentRequestsOptions {
  collection: Collection<IdempotencyDocument>;
  /** What the stored answer and the question's hash are sealed with (the database's cipher). Default: stored clear. */
  cipher?: ContentCipher;
  /** Default: {@link DEFAULT_API_IDEMPOTENCY_TTL_S}. */
  expiresAfterSeconds?: number;
  /** After this long an in-progress request is presumed dead and may be retried. Default: the lease TTL. */
  inProgressTimeoutMs?: number;
}

/**
 * Requests with an Idempotency-Key (`POST .../messages`), through Powertools `makeIdempotent`
 * and the MongoDB persistence layer: a repeat returns the first response, a repeat while the
 * first is running is a conflict, and the same key with another payload is refused.
 */
export class IdempotentRequests {
  readonly #persistence: IdempotencyPersistenceLayer;
  readonly #run: (request: KeyedRequest, deadline: Deadline, work: () => Promise<unknown>) => Promise<unknown>;
  readonly #deadline: Deadline;

  constructor(options: IdempotentRequestsOptions) {
    this.#persistence = new IdempotencyPersistenceLayer({ collection: options.collection, cipher: options.cipher });
    const inProgressMs = options.inProgressTimeoutMs ?? DEFAULT_LEASE_TTL_MS;
    // Powertools takes the in-progress expiry from a Lambda-style context; a turn has the lease's.
    this.#deadline = { getRemainingTimeInMillis: () => inProgressMs };
    const config = new IdempotencyConfig({
      eventKeyJmesPath: "key",
      payloadValidationJmesPath: "payload",
      throwOnNoIdempotencyKey: true,
      expiresAfterSeconds: options.expiresAfterSeconds ?? DEFAULT_API_IDEMPOTENCY_TTL_S,
    });
    // Configured here too (Powertools configures a layer once), so `withTags` hashes keys as the requests do before any ran.
    this.#persistence.configure({ config, keyPrefix: DEFAULT_API_IDEMPOTENCY_KEY_PREFIX });
    this.#run = makeIdempotent(async (_request: KeyedRequest, _deadline: Deadline, work: () => Promise<unknown>) => work(), {
      persistenceStore: this.#persistence,
      keyPrefix: DEFAULT_API_IDEMPOTENCY_KEY_PREFIX,
      config,
    });
  }

  async setup(): Promise<void> {
    await this.#persistence.setup();
  }

  /**
   * `scope` names whose key it is (caller and resource); `payload` must match on a repeat. `tags`
   * (the conversation and its caller) are stored beside the hashed key from the record's first
   * write, so deleting the conversation or erasing the caller finds the record
   * (docs/data-lifecycle.md), and the conversation's tenant seals the stored answer and the
   * payload's hash (docs/security.md, "What is encrypted"); with encryption on, `tags` must name the conversation.
   */
  async run<T>(scope: readonly string[], idempotencyKey: string, payload: string, work: () => Promise<T>, tags?: IdempotencyTags): Promise<T> {
    const key = JSON.stringify([...scope, idempotencyKey]);
    const run = () => this.#run({ key, payload }, this.#deadline, work);
    try {
      return (await (tags ? this.#persistence.withTags({ key }, tags, run) : run())) as T;
    } catch (error) {
      if (error instanceof IdempotencyAlreadyInProgressError) {
        throw new ConflictError("a request with this Idempotency-Key is still in progress", 1, { cause: error });
      }
      if (error instanceof IdempotencyValidationError) {
        throw new IdempotencyKeyReusedError("this Idempotency-Key was used with a different body", { cause: error });
      }
      throw refusalOrError(error);
    }
  }

  /**
   * `run`, answered once the key's verdict is known: the work began, or the first response came
   * back, and `running` holds the outcome; refused as `run` refuses (another payload, the first
   * request still in progress) before any work. What a response that begins before the work ends (a stream) needs.
   */
  async start<T>(
    scope: readonly string[],
    idempotencyKey: string,
    payload: string,
    work: () => Promise<T>,
    tags?: IdempotencyTags,
  ): Promise<{ running: Promise<T> }> {
    let began!: () => void;
    const begun = new Promise<void>((resolve) => (began = resolve));
    const running = this.run(
      scope,
      idempotencyKey,
      payload,
      () => {
        began();
        return work();
      },
      tags,
    );
    await Promise.race([begun, running]);
    return { running };
  }
}
