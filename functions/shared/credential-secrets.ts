import { GetSecretValueCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { ThreadwiseError } from "../../lib/errors.js";

/** Each secret's value by name: a JSON secret parsed, any other string as it is, a binary secret undefined. */
export type SecretValues = Record<string, unknown>;

/** GetSecretValue failed for one secret: denied, no current value, throttled, unreachable. */
export class SecretUnreadableError extends ThreadwiseError {
  override name = "SecretUnreadableError";
  constructor(
    readonly secret: string,
    options: ErrorOptions,
  ) {
    super(`the ${secret} secret could not be read`, options);
  }
}

export interface CredentialSecretsOptions {
  client: Pick<SecretsManagerClient, "send">;
  /** The secrets' ARNs, by name. */
  arns: Record<string, string>;
  /** How long fetched values are reused. */
  cacheMs: number;
  /** Told of every failed fetch, also of one at cold start that no invocation awaits yet. */
  onFailure: (error: SecretUnreadableError) => void;
  /** Default: `Date.now`. */
  now?: () => number;
}

/**
 * A function's credentials secrets, fetched at cold start and reused for `cacheMs` (docs/deploying.md, "The
 * credentials secrets"). A failed fetch never stays an unhandled rejection, which the Lambda
 * runtime answers by ending the container: it is reported, the invocation that asks gets it, and
 * the next one fetches again. Values fetched before keep serving while a refresh fails.
 */
export class CredentialSecrets {
  private fetched?: { values: SecretValues; at: number };
  private inFlight?: Promise<SecretValues>;
  private readonly now: () => number;

  constructor(private readonly options: CredentialSecretsOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Starts the fetch without waiting for it (at cold start, before the first invocation). */
  prefetch(): void {
    this.fetch().catch(() => undefined);
  }

  /** The current values; throws `SecretUnreadableError` when a secret cannot be read and none was before. */
  async values(): Promise<SecretValues> {
    if (this.fetched && this.now() - this.fetched.at < this.options.cacheMs) return this.fetched.values;
    try {
      return await this.fetch();
    } catch (error) {
      if (this.fetched) return this.fetched.values;
      throw error;
    }
  }

  private fetch(): Promise<SecretValues> {
    this.inFlight ??= this.load()
      .then(
        (values) => {
          this.fetched = { values, at: this.now() };
          return values;
        },
        (error: SecretUnreadableError) => {
          this.options.onFailure(error);
          throw error;
        },
      )
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }

  private async load(): Promise<SecretValues> {
    const read = async ([name, arn]: [string, string]) => {
      try {
        const { SecretString } = await this.options.client.send(new GetSecretValueCommand({ SecretId: arn }));
        return [name, parseSecretString(SecretString)] as const;
      } catch (error) {
        throw new SecretUnreadableError(name, { cause: error });
      }
    };
    return Object.fromEntries(await Promise.all(Object.entries(this.options.arns).map(read)));
  }
}

/** A JSON secret parsed; any other string as it is, for the credentials' validation to refuse by name. */
function parseSecretString(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
