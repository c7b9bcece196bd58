import { z } from "zod";
import { ValidationError } from "../errors.js";

/**
 * The channel fields of the credentials JSON in the secret store. A channel is enabled when
 * all of its required fields are present.
 */
export const channelCredentialsSchema = z.object({
  /** Slack app → Basic Information → Signing Secret. */
  slackSigningSecret: z.string().min(1).optional(),
  /** Slack app → OAuth & Permissions → Bot User OAuth Token (`xoxb-…`). */
  slackBotToken: z.string().startsWith("xoxb-").optional(),
  /** Azure Bot → Configuration → Microsoft App ID. */
  teamsAppId: z.string().min(1).optional(),
  /** The client secret of that app registration. */
  teamsAppPassword: z.string().min(1).optional(),
  /** Single-tenant bots only: the app's Entra tenant id (multi-tenant bots use botframework.com). */
  teamsAppTenantId: z.string().min(1).optional(),
});

export interface ChannelCredentials {
  slack?: { signingSecret: string; botToken: string };
  teams?: { appId: string; appPassword: string; tenant?: string };
}

/**
 * Reads the channel fields of the parsed credentials JSON (other fields are ignored). Half a
 * channel's credentials is a `ValidationError` naming the missing field, never a channel that
 * fails at the first message.
 */
export function parseChannelCredentials(secret: unknown): ChannelCredentials {
  const parsed = channelCredentialsSchema.safeParse(secret);
  if (!parsed.success) {
    throw new ValidationError(
      "invalid channel credentials",
      parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
    );
  }
  const c = parsed.data;
  const out: ChannelCredentials = {};
  const partial = (fields: Record<string, unknown>) => {
    const missing = Object.entries(fields).filter(([, v]) => v === undefined).map(([k]) => k);
    if (missing.length > 0 && missing.length < Object.keys(fields).length) {
      throw new ValidationError(
        "incomplete channel credentials",
        missing.map((path) => ({ path, message: "required when the channel's other credentials are set" })),
      );
    }
    return missing.length === 0;
  };
  if (partial({ slackSigningSecret: c.slackSigningSecret, slackBotToken: c.slackBotToken })) {
    out.slack = { signingSecret: c.slackSigningSecret as string, botToken: c.slackBotToken as string };
  }
  if (partial({ teamsAppId: c.teamsAppId, teamsAppPassword: c.teamsAppPassword })) {
    out.teams = { appId: c.teamsAppId as string, appPassword: c.teamsAppPassword as string, tenant: c.teamsAppTenantId };
  }
  return out;
}
