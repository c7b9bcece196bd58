import { z } from "zod";
import { ValidationError } from "../errors.js";

/**
 * The credentials secret (one Secrets Manager secret per stage, JSON). Only `mongodbUri` is
 * required; a channel's values are needed once that channel is connected.
 */
export const credentialsSchema = z.object({
  mongodbUri: z.string().regex(/^mongodb(\+srv)?:\/\//, "a mongodb:// or mongodb+srv:// URI"),
  slackSigningSecret: z.string().min(1).optional(),
  slackBotToken: z.string().min(1).optional(),
  teamsAppId: z.string().min(1).optional(),
  teamsAppPassword: z.string().min(1).optional(),
  /** Entra tenant of a single-tenant bot; unset for a multi-tenant one. */
  teamsTenantId: z.string().min(1).optional(),
});

export type Credentials = z.infer<typeof credentialsSchema>;

/** True when the driver will use TLS for this URI: SRV URIs do unless told not to; others must ask. */
export function mongodbUriUsesTls(uri: string): boolean {
  const query = new URLSearchParams(uri.split("?")[1] ?? "");
  const flag = query.get("tls") ?? query.get("ssl");
  if (flag !== null) return flag.toLowerCase() === "true";
  return uri.startsWith("mongodb+srv://");
}

/**
 * Validates the secret's value. Error details name fields, never values: the secret must not
 * reach a log through an error message.
 */
export function parseCredentials(value: unknown, options: { requireTls: boolean }): Credentials {
  const parsed = credentialsSchema.safeParse(value);
  if (!parsed.success) {
    throw new ValidationError(
      "invalid credentials secret",
      parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.code })),
    );
  }
  if (options.requireTls && !mongodbUriUsesTls(parsed.data.mongodbUri)) {
    throw new ValidationError("invalid credentials secret", [{ path: "mongodbUri", message: "must use TLS (mongodb+srv:// or tls=true)" }]);
  }
  return parsed.data;
}
