import { z } from "zod";
import { ValidationError } from "../errors.js";

/**
 * The channel keys of the credentials secret. A channel is connected when all of its required
 * keys are set; half of them is an error, never a channel that fails at its first message.
 */
export const channelCredentialsSchema = z.object({
  /** Slack app › Basic Information › Signing Secret. */
  slackSigningSecret: z.string().min(1).optional(),
  /** Slack app › OAuth & Permissions › Bot User OAuth Token. */
  slackBotToken: z.string().startsWith("xoxb-", "a bot token (xoxb-…)").optional(),
  /** Azure Bot › Configuration › Microsoft App ID. */
  teamsAppId: z.string().min(1).optional(),
  /** A client secret of that app registration. */
  teamsAppPassword: z.string().min(1).optional(),
  /** Entra tenant of a single-tenant bot; unset for a multi-tenant one. */
  teamsTenantId: z.string().min(1).optional(),
});

/**
 * The credentials secret (one Secrets Manager secret per stage, JSON). Only `mongodbUri` is
 * required; a channel's keys are needed once that channel is connected. Local mode reads the
 * same channel keys from the environment ({@link channelCredentialsFromEnv}).
 */
export const credentialsSchema = channelCredentialsSchema
  .extend({
    mongodbUri: z.string().regex(/^mongodb(\+srv)?:\/\//, "a mongodb:// or mongodb+srv:// URI"),
    /** The Entra ID app that reads the Power BI semantic model (`query_semantic_model`). */
    powerBiClientId: z.string().min(1).optional(),
    powerBiClientSecret: z.string().min(1).optional(),
  })
  // Other string keys stay readable by name, for tools whose secret names are configured.
  .catchall(z.string());

export type Credentials = z.infer<typeof credentialsSchema>;

/** The connected channels, each with everything it needs. */
export interface ChannelCredentials {
  slack?: { signingSecret: string; botToken: string };
  teams?: { appId: string; appPassword: string; tenantId?: string };
}

/** The environment variables of local mode, by the secret key each stands for. */
export const CHANNEL_CREDENTIAL_ENV = {
  slackSigningSecret: "SLACK_SIGNING_SECRET",
  slackBotToken: "SLACK_BOT_TOKEN",
  teamsAppId: "TEAMS_APP_ID",
  teamsAppPassword: "TEAMS_APP_PASSWORD",
  teamsTenantId: "TEAMS_TENANT_ID",
} as const satisfies Record<keyof z.infer<typeof channelCredentialsSchema>, string>;

/** The keys each channel needs; `teamsTenantId` is optional and so not listed. */
const REQUIRED_KEYS = {
  slack: ["slackSigningSecret", "slackBotToken"],
  teams: ["teamsAppId", "teamsAppPassword"],
} as const;

/** True when the driver will use TLS for this URI: SRV URIs do unless told not to; others must ask. */
export function mongodbUriUsesTls(uri: string): boolean {
  const query = new URLSearchParams(uri.split("?")[1] ?? "");
  const flag = query.get("tls") ?? query.get("ssl");
  if (flag !== null) return flag.toLowerCase() === "true";
  return uri.startsWith("mongodb+srv://");
}

/** Error details name fields and rules, never values: a secret must not reach a log through an error. */
function invalid(message: string, error: z.ZodError): ValidationError {
  return new ValidationError(
    message,
    error.issues.map((i) => ({ path: i.path.join("."), message: i.code })),
  );
}

/** Validates the secret's value (the Lambda handlers). */
export function parseCredentials(value: unknown, options: { requireTls: boolean }): Credentials {
  const parsed = credentialsSchema.safeParse(value);
  if (!parsed.success) throw invalid("invalid credentials secret", parsed.error);
  if (options.requireTls && !mongodbUriUsesTls(parsed.data.mongodbUri)) {
    throw new ValidationError("invalid credentials secret", [{ path: "mongodbUri", message: "must use TLS (mongodb+srv:// or tls=true)" }]);
  }
  return parsed.data;
}

/**
 * The connected channels of validated credentials. Throws `ValidationError` naming the missing
 * keys when a channel is half configured.
 */
export function channelCredentialsOf(credentials: z.infer<typeof channelCredentialsSchema>): ChannelCredentials {
  const missing: { path: string; message: string }[] = [];
  const complete = (keys: readonly (keyof typeof credentials)[]) => {
    const absent = keys.filter((k) => credentials[k] === undefined);
    if (absent.length > 0 && absent.length < keys.length) {
      missing.push(...absent.map((path) => ({ path, message: "required when the channel's other credentials are set" })));
    }
    return absent.length === 0;
  };
  const out: ChannelCredentials = {};
  if (complete(REQUIRED_KEYS.slack)) {
    out.slack = { signingSecret: credentials.slackSigningSecret!, botToken: credentials.slackBotToken! };
  }
  if (complete(REQUIRED_KEYS.teams)) {
    out.teams = { appId: credentials.teamsAppId!, appPassword: credentials.teamsAppPassword!, tenantId: credentials.teamsTenantId };
  }
  if (missing.length > 0) throw new ValidationError("incomplete channel credentials", missing);
  return out;
}

/**
 * Local mode's channel credentials, from the variables of {@link CHANNEL_CREDENTIAL_ENV}
 * validated by the secret's own schema. Unset or empty variables leave the channel off.
 */
export function channelCredentialsFromEnv(env: Record<string, string | undefined>): ChannelCredentials {
  const value: Record<string, string> = {};
  for (const [key, variable] of Object.entries(CHANNEL_CREDENTIAL_ENV)) {
    const set = env[variable];
    if (set) value[key] = set;
  }
  try {
    const parsed = channelCredentialsSchema.safeParse(value);
    if (!parsed.success) throw invalid("invalid channel credentials", parsed.error);
    return channelCredentialsOf(parsed.data);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    // Local users set variables, not secret keys: the details name the variable.
    const variable = (path: string) => CHANNEL_CREDENTIAL_ENV[path as keyof typeof CHANNEL_CREDENTIAL_ENV] ?? path;
    throw new ValidationError(error.message, error.details?.map((d) => ({ ...d, path: variable(d.path) })));
  }
}
