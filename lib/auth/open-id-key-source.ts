import { createRemoteJWKSet, type RemoteJWKSet } from "jose";
import { z } from "zod";
import { ServiceUnavailableError } from "../errors.js";

/** Timeout of one metadata or key-set request, in milliseconds. */
export const DEFAULT_OPENID_FETCH_TIMEOUT_MS = 5_000;
/** How long the metadata document (and so the `jwks_uri`) is trusted before it is read again. */
export const DEFAULT_OPENID_METADATA_MAX_AGE_MS = 24 * 60 * 60 * 1000;
/** How long fetched signing keys are kept; an unknown `kid` refetches sooner (after jose's cooldown). */
export const DEFAULT_OPENID_KEYS_MAX_AGE_MS = 60 * 60 * 1000;

const metadataSchema = z.object({ jwks_uri: z.url() });

export interface OpenIdKeySourceOptions {
  /** Default: {@link DEFAULT_OPENID_FETCH_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Default: {@link DEFAULT_OPENID_METADATA_MAX_AGE_MS}. */
  metadataMaxAgeMs?: number;
  /** Default: {@link DEFAULT_OPENID_KEYS_MAX_AGE_MS}. */
  keysMaxAgeMs?: number;
}

/**
 * Signing keys named by an OpenID metadata document, fetched once and cached for the life of
 * the container (jose's remote key set refreshes them when they rotate).
 */
export class OpenIdKeySource {
  private loaded?: { keys: Promise<RemoteJWKSet>; at: number };
  private readonly timeoutMs: number;
  private readonly metadataMaxAgeMs: number;
  private readonly keysMaxAgeMs: number;

  constructor(
    readonly metadataUrl: string,
    options: OpenIdKeySourceOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_OPENID_FETCH_TIMEOUT_MS;
    this.metadataMaxAgeMs = options.metadataMaxAgeMs ?? DEFAULT_OPENID_METADATA_MAX_AGE_MS;
    this.keysMaxAgeMs = options.keysMaxAgeMs ?? DEFAULT_OPENID_KEYS_MAX_AGE_MS;
  }

  /** The key resolver for `jwtVerify`; throws `ServiceUnavailableError` when the metadata cannot be read. */
  async keys(): Promise<RemoteJWKSet> {
    const now = Date.now();
    if (!this.loaded || now - this.loaded.at > this.metadataMaxAgeMs) {
      const keys = this.load();
      this.loaded = { keys, at: now };
      // A failed read must not stick: the next request tries again.
      keys.catch(() => {
        if (this.loaded?.keys === keys) this.loaded = undefined;
      });
    }
    return this.loaded.keys;
  }

  private async load(): Promise<RemoteJWKSet> {
    let body: unknown;
    try {
      const response = await fetch(this.metadataUrl, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (!response.ok) throw new Error(`metadata answered ${response.status}`);
      body = await response.json();
    } catch (error) {
      throw new ServiceUnavailableError("openid metadata unavailable", undefined, { cause: error });
    }
    const parsed = metadataSchema.safeParse(body);
    if (!parsed.success) throw new ServiceUnavailableError("openid metadata has no jwks_uri", undefined, { cause: parsed.error });
    return createRemoteJWKSet(new URL(parsed.data.jwks_uri), {
      timeoutDuration: this.timeoutMs,
      cacheMaxAge: this.keysMaxAgeMs,
    });
  }
}
