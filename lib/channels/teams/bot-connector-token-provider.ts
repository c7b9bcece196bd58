import { z } from "zod";
import { ChannelDeliveryError } from "../../errors.js";

/**
 * Entra token endpoint; `{tenant}` is the bot's tenant for a single-tenant bot, else
 * `botframework.com`.
 */
export const DEFAULT_BOT_CONNECTOR_TOKEN_URL = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token";
/** Token tenant of a multi-tenant bot registration. */
export const DEFAULT_BOT_CONNECTOR_TENANT = "botframework.com";
/** Scope of tokens for calling the Bot Connector. */
export const DEFAULT_BOT_CONNECTOR_SCOPE = "https://api.botframework.com/.default";
/** A cached token is replaced this long before it expires, so none expires in flight. */
export const DEFAULT_TOKEN_REFRESH_MARGIN_MS = 5 * 60 * 1000;
/** Timeout of one token request, in milliseconds. */
export const DEFAULT_TOKEN_TIMEOUT_MS = 10_000;

const tokenResponseSchema = z.object({
  access_token: z.string().min(1),
  expires_in: z.coerce.number().int().positive(),
});

export interface BotConnectorTokenProviderOptions {
  /** The bot's Microsoft App ID (client id). */
  appId: string;
  /** The app's client secret, from the secret store. */
  appPassword: string;
  /** Default: {@link DEFAULT_BOT_CONNECTOR_TENANT}. */
  tenant?: string;
  /** Default: {@link DEFAULT_BOT_CONNECTOR_TOKEN_URL}. `{tenant}` is replaced. */
  tokenUrl?: string;
  /** Default: {@link DEFAULT_BOT_CONNECTOR_SCOPE}. */
  scope?: string;
  /** Default: {@link DEFAULT_TOKEN_REFRESH_MARGIN_MS}. */
  refreshMarginMs?: number;
  /** Default: {@link DEFAULT_TOKEN_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/** Client-credentials tokens for the Bot Connector, cached until shortly before they expire. */
export class BotConnectorTokenProvider {
  private cached?: { token: Promise<string>; expiresAt: number };
  private readonly tokenUrl: string;
  private readonly refreshMarginMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly options: BotConnectorTokenProviderOptions) {
    this.tokenUrl = (options.tokenUrl ?? DEFAULT_BOT_CONNECTOR_TOKEN_URL).replace(
      "{tenant}",
      encodeURIComponent(options.tenant ?? DEFAULT_BOT_CONNECTOR_TENANT),
    );
    this.refreshMarginMs = options.refreshMarginMs ?? DEFAULT_TOKEN_REFRESH_MARGIN_MS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TOKEN_TIMEOUT_MS;
  }

  /** A valid token; concurrent callers share one request. */
  async token(now: number = Date.now()): Promise<string> {
    if (!this.cached || now >= this.cached.expiresAt) {
      const token = this.fetchToken(now);
      // Until the real expiry is known, concurrent callers wait on this request.
      const entry = { token: token.then((t) => t.accessToken), expiresAt: Number.POSITIVE_INFINITY };
      this.cached = entry;
      token.then(
        (t) => (entry.expiresAt = t.expiresAt),
        () => {
          if (this.cached === entry) this.cached = undefined;
        },
      );
    }
    return this.cached.token;
  }

  /** Drops the cached token, after the Bot Connector refused it. */
  invalidate(): void {
    this.cached = undefined;
  }

  private async fetchToken(now: number): Promise<{ accessToken: string; expiresAt: number }> {
    let response: Response;
    try {
      response = await fetch(this.tokenUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: new URLSearchParams({
          grant_type: "client_credentials",
          client_id: this.options.appId,
          client_secret: this.options.appPassword,
          scope: this.options.scope ?? DEFAULT_BOT_CONNECTOR_SCOPE,
        }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new ChannelDeliveryError("bot connector token endpoint unreachable", "teams", undefined, { cause: error });
    }
    if (!response.ok) {
      throw new ChannelDeliveryError("bot connector token request refused", "teams", response.status);
    }
    const parsed = tokenResponseSchema.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) {
      throw new ChannelDeliveryError("bot connector token response unreadable", "teams", response.status, { cause: parsed.error });
    }
    return {
      accessToken: parsed.data.access_token,
      expiresAt: now + parsed.data.expires_in * 1000 - this.refreshMarginMs,
    };
  }
}
