import { z } from "zod";
import { ServiceUnavailableError, ValidationError } from "../errors.js";

/**
 * The credentials secrets of a deployment and the keys each holds. Keys are grouped by the
 * functions that read them, so each function is granted only the secrets whose keys it uses
 * (docs/deploying.md, "The credentials secrets"); the stack creates every secret with all its keys empty.
 * `variable` is the environment variable that carries the secret's ARN to a function.
 */
export const CREDENTIAL_SECRETS = {
  /** Every function: the MongoDB connection string. */
  database: { name: "database", variable: "DATABASE_SECRET_ARN", keys: ["mongodbUri"] },
  /** The slack function: verifies Slack's requests. */
  slackSigning: { name: "slack-signing", variable: "SLACK_SIGNING_SECRET_ARN", keys: ["slackSigningSecret"] },
  /** The teams function (the audience of incoming tokens) and the worker (the client id of replies). */
  teamsBot: { name: "teams-bot", variable: "TEAMS_BOT_SECRET_ARN", keys: ["teamsAppId", "teamsTenantId"] },
  /**
   * What posts answers to Slack and Teams: the worker, and each webhook for its approvals (Slack's edit
   * modal, Teams' card). One secret for both channels, so each webhook can read the other's key too.
   */
  channelReplies: { name: "channel-replies", variable: "CHANNEL_REPLIES_SECRET_ARN", keys: ["slackBotToken", "teamsAppPassword"] },
  /** The api, the stream function and the worker, when `query_semantic_model` is offered. */
  powerBi: { name: "power-bi", variable: "POWER_BI_SECRET_ARN", keys: ["powerBiClientId", "powerBiClientSecret"] },
} as const;

export type CredentialSecretName = keyof typeof CREDENTIAL_SECRETS;
export type CredentialKey = (typeof CREDENTIAL_SECRETS)[CredentialSecretName]["keys"][number];
export const CREDENTIAL_SECRET_NAMES = Object.keys(CREDENTIAL_SECRETS) as CredentialSecretName[];

const HOMES = new Map<string, CredentialSecretName>(
  CREDENTIAL_SECRET_NAMES.flatMap((name) => CREDENTIAL_SECRETS[name].keys.map((key) => [key, name] as const)),
);

/** The secret that holds `key`. */
export function secretOf(key: CredentialKey): CredentialSecretName {
  return HOMES.get(key)!;
}

/** The JSON a new secret is created with: every key, empty until the user fills it in. */
export function secretTemplate(name: CredentialSecretName): Record<string, string> {
  return Object.fromEntries(CREDENTIAL_SECRETS[name].keys.map((key) => [key, ""]));
}

/**
 * The channel keys. A channel is connected when all of its required keys are set; half of them
 * is an error, never a channel that fails at its first message.
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
 * Every key a function may read, merged from the secrets it is granted. Each is optional here:
 * a function asks for the ones it needs ({@link requireCredentials}). Local mode reads the same
 * channel keys from the environment ({@link channelCredentialsFromEnv}).
 */
export const credentialsSchema = channelCredentialsSchema
  .extend({
    mongodbUri: z
      .string()
      .regex(/^mongodb(\+srv)?:\/\//, "a mongodb:// or mongodb+srv:// URI")
      .optional(),
    /** The Entra ID app that reads the Power BI semantic model (`query_semantic_model`). */
    powerBiClientId: z.string().min(1).optional(),
    powerBiClientSecret: z.string().min(1).optional(),
  })
  // Other string keys stay readable by name, for tools whose secret names are configured.
  .catchall(z.string());

export type Credentials = z.infer<typeof credentialsSchema>;

/** What the webhooks need to verify a request, and nothing more. */
export interface ChannelIngressCredentials {
  slack?: { signingSecret: string };
  teams?: { appId: string };
}

/** What the worker needs to answer in a channel. */
export interface ChannelReplyCredentials {
  slack?: { botToken: string };
  teams?: { appId: string; appPassword: string; tenantId?: string };
}

/** The connected channels, each with everything it needs (local mode, where one process does both). */
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

/** Seconds a caller is asked to wait while the deployment's secrets are being filled in. */
export const NOT_CONFIGURED_RETRY_AFTER_S = 60;

/**
 * Keys a function needs are empty in their secret: the deployment is not finished. Answered 503,
 * and logged with the keys and secrets to fill in (names only, never values).
 */
export class CredentialsMissingError extends ServiceUnavailableError {
  override name = "CredentialsMissingError";
  constructor(readonly missing: { key: CredentialKey; secret: CredentialSecretName }[]) {
    super(
      `not configured: ${missing.map((m) => `${m.key} in the ${CREDENTIAL_SECRETS[m.secret].name} secret`).join(", ")} must be set`,
      NOT_CONFIGURED_RETRY_AFTER_S,
    );
  }
}

/** True when the driver will use TLS for this URI: SRV URIs do unless told not to; others must ask. */
export function mongodbUriUsesTls(uri: string): boolean {
  const query = new URLSearchParams(uri.split("?")[1] ?? "");
  const flag = query.get("tls") ?? query.get("ssl");
  if (flag !== null) return flag.toLowerCase() === "true";
  return uri.startsWith("mongodb+srv://");
}

/** Error details name fields and rules, never values: a secret must not reach a log through an error. */
function invalid(message: string, error: z.ZodError, prefix = ""): ValidationError {
  return new ValidationError(
    message,
    error.issues.map((i) => ({ path: `${prefix}${i.path.join(".")}`, message: i.code })),
  );
}

/**
 * Merges and validates the values of a function's secrets (the Lambda handlers), by secret name.
 * An empty value is an unset key, as in a secret created from its template. A key of one secret
 * found in another is refused, so a value is never read from where docs/deploying.md does not put it.
 */
export function parseCredentials(secrets: Partial<Record<CredentialSecretName, unknown>>, options: { requireTls: boolean }): Credentials {
  const merged: Record<string, unknown> = {};
  const misplaced: { path: string; message: string }[] = [];
  for (const name of CREDENTIAL_SECRET_NAMES) {
    const value = secrets[name];
    if (value === undefined) continue;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new ValidationError("invalid credentials secret", [{ path: CREDENTIAL_SECRETS[name].name, message: "not a JSON object" }]);
    }
    for (const [key, v] of Object.entries(value)) {
      if (v === "") continue;
      const home = HOMES.get(key);
      if (home !== undefined && home !== name) {
        misplaced.push({ path: `${CREDENTIAL_SECRETS[name].name}.${key}`, message: `belongs in the ${CREDENTIAL_SECRETS[home].name} secret` });
      } else merged[key] = v;
    }
  }
  if (misplaced.length > 0) throw new ValidationError("invalid credentials secret", misplaced);
  const parsed = credentialsSchema.safeParse(merged);
  if (!parsed.success) throw invalid("invalid credentials secret", parsed.error);
  if (options.requireTls && parsed.data.mongodbUri !== undefined && !mongodbUriUsesTls(parsed.data.mongodbUri)) {
    throw new ValidationError("invalid credentials secret", [{ path: "mongodbUri", message: "must use TLS (mongodb+srv:// or tls=true)" }]);
  }
  return parsed.data;
}

/** The values of `keys`, or `CredentialsMissingError` naming every one that is empty and its secret. */
export function requireCredentials<K extends CredentialKey>(credentials: Credentials, keys: readonly K[]): Record<K, string> {
  const missing = keys.filter((key) => credentials[key] === undefined);
  if (missing.length > 0) throw new CredentialsMissingError(missing.map((key) => ({ key, secret: secretOf(key) })));
  return Object.fromEntries(keys.map((key) => [key, credentials[key]])) as Record<K, string>;
}

/** The channels a webhook can verify: Slack with its signing secret, Teams with its app id. */
export function channelIngressCredentialsOf(credentials: Credentials): ChannelIngressCredentials {
  return {
    slack: credentials.slackSigningSecret ? { signingSecret: credentials.slackSigningSecret } : undefined,
    teams: credentials.teamsAppId ? { appId: credentials.teamsAppId } : undefined,
  };
}

/**
 * The channels the worker can answer in, or only `channel`'s (a webhook, which reads the shared
 * `channel-replies` secret for its own channel). A half-configured Teams bot (an app id without
 * its password, or the reverse) throws `CredentialsMissingError` naming the missing key, unless
 * only Slack's are asked for: the slack function does not read the Teams app id.
 */
export function channelReplyCredentialsOf(credentials: Credentials, channel?: "slack" | "teams"): ChannelReplyCredentials {
  const replies: ChannelReplyCredentials = {};
  if (channel !== "teams" && credentials.slackBotToken) replies.slack = { botToken: credentials.slackBotToken };
  if (channel === "slack") return replies;
  const teamsKeys = REQUIRED_KEYS.teams.filter((key) => credentials[key] !== undefined);
  if (teamsKeys.length === 1) requireCredentials(credentials, REQUIRED_KEYS.teams);
  if (credentials.teamsAppId && credentials.teamsAppPassword) {
    replies.teams = { appId: credentials.teamsAppId, appPassword: credentials.teamsAppPassword, tenantId: credentials.teamsTenantId };
  }
  return replies;
}

/**
 * The connected channels of validated credentials (local mode). Throws `ValidationError` naming
 * the missing keys when a channel is half configured.
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
 * validated by the secrets' own schema. Unset or empty variables leave the channel off.
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
    throw new ValidationError(
      error.message,
      error.details?.map((d) => ({ ...d, path: variable(d.path) })),
    );
  }
}
