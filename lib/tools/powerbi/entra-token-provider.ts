import { z } from "zod";
import { ToolError } from "../../errors.js";
import type { SecretSource } from "../secrets.js";

/** The Power BI REST API's scope for the client-credentials grant. */
export const POWERBI_SCOPE = "https://analysis.windows.net/powerbi/api/.default";
/** A token is renewed this long before it expires, so no request carries one that expires in flight. */
export const DEFAULT_TOKEN_EXPIRY_SKEW_MS = 60_000;
/** Longest a token request may take: it is shared by concurrent callers, so no one caller's signal ends it. */
export const DEFAULT_TOKEN_REQUEST_TIMEOUT_MS = 10_000;

export interface EntraTokenProviderOptions {
  /** Authority base, e.g. `https://login.microsoftonline.com`. */
  loginUrl: string;
  tenantId: string;
  secrets: SecretSource;
  clientIdSecret: string;
  clientSecretSecret: string;
  scope?: string;
  fetch?: typeof fetch;
  /** Default: `DEFAULT_TOKEN_EXPIRY_SKEW_MS`. */
  expirySkewMs?: number;
}

const tokenResponse = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number().positive() });
const tokenError = z.object({ error: z.string(), error_description: z.string().optional() });

/** `promise`, or its caller's signal's reason as soon as the signal aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Entra ID client-credentials tokens for a service principal, cached until shortly before they
 * expire; concurrent callers share one token request.
 */
export class EntraTokenProvider {
  readonly #options: EntraTokenProviderOptions;
  readonly #fetch: typeof fetch;
  #cached?: { token: string; expiresAt: number };
  #pending?: Promise<string>;
  /** Token requests made, for tests and metrics. */
  requests = 0;

  constructor(options: EntraTokenProviderOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  /** The cached token or a new one; `signal` ends this caller's wait, not the request other callers share. */
  async getToken(signal?: AbortSignal): Promise<string> {
    if (this.#cached && Date.now() < this.#cached.expiresAt) return this.#cached.token;
    this.#pending ??= this.#request(AbortSignal.timeout(DEFAULT_TOKEN_REQUEST_TIMEOUT_MS)).finally(() => {
      this.#pending = undefined;
    });
    return signal ? untilAborted(this.#pending, signal) : this.#pending;
  }

  /** Drops the cached token (after the API rejected it). */
  invalidate(): void {
    this.#cached = undefined;
  }

  async #request(signal?: AbortSignal): Promise<string> {
    const o = this.#options;
    const [clientId, clientSecret] = await Promise.all([o.secrets.get(o.clientIdSecret), o.secrets.get(o.clientSecretSecret)]);
    if (!clientId || !clientSecret) {
      throw new ToolError("Power BI credentials are not configured in the secret store", "query_semantic_model");
    }
    this.requests++;
    const response = await this.#fetch(`${o.loginUrl.replace(/\/$/, "")}/${encodeURIComponent(o.tenantId)}/oauth2/v2.0/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: clientId,
        client_secret: clientSecret,
        scope: o.scope ?? POWERBI_SCOPE,
      }),
      signal,
    });
    const body: unknown = await response.json().catch(() => undefined);
    if (!response.ok) {
      // The error code (invalid_client, unauthorized_client, ...) is safe to show; the description may echo ids.
      const code = tokenError.safeParse(body).data?.error ?? `HTTP ${response.status}`;
      throw new ToolError(`could not sign in to Power BI (${code}); the service credentials need attention`, "query_semantic_model");
    }
    const parsed = tokenResponse.safeParse(body);
    if (!parsed.success) throw new ToolError("Power BI sign-in returned no token", "query_semantic_model");
    const skew = o.expirySkewMs ?? DEFAULT_TOKEN_EXPIRY_SKEW_MS;
    this.#cached = { token: parsed.data.access_token, expiresAt: Date.now() + parsed.data.expires_in * 1000 - skew };
    return parsed.data.access_token;
  }
}
