import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { durationSeconds, envSchemaOf, setting, withDefaults } from "./settings.js";

/** Longest user message accepted, in characters. */
export const DEFAULT_MAX_MESSAGE_CHARS = 16_000;
/** Port of the local server. */
export const DEFAULT_PORT = 3000;
/** How often the local server expires approvals past their deadline: a minute, so a local user sees an expiry soon after it is due. */
export const DEFAULT_APPROVAL_SWEEP_SECONDS = 60;
/** How often the local server's recovery sweep runs: a minute, as the stack's schedule (`TURN_RECOVERY_INTERVAL`) runs it in AWS. */
export const DEFAULT_TURN_RECOVERY_SWEEP_SECONDS = 60;

const positiveInt = z.coerce.number().int().positive();

/** The settings of the server a turn enters: the message it takes, and the local server's port and sweeps, defined once (see `settings.ts`). */
export const SERVER_SETTINGS = {
  MAX_MESSAGE_CHARS: setting({ schema: positiveInt, default: DEFAULT_MAX_MESSAGE_CHARS, description: "longest user message" }),
  PORT: setting({ schema: positiveInt.max(65_535), default: DEFAULT_PORT, description: "local server port" }),
  APPROVAL_SWEEP_SECONDS: setting({
    schema: durationSeconds,
    default: DEFAULT_APPROVAL_SWEEP_SECONDS,
    description:
      "local server: how often it rejects as expired the approvals past their deadline and resumes their turns " +
      "(in AWS the worker's schedule does it every 5 minutes; [approvals.md](approvals.md))",
  }),
  TURN_RECOVERY_SWEEP_SECONDS: setting({
    schema: durationSeconds,
    default: DEFAULT_TURN_RECOVERY_SWEEP_SECONDS,
    description:
      "local server: how often it finishes or resumes the turns whose process died (a lapsed lease); a crashed " +
      "holder's conversation takes a new message within LEASE_TTL_MS plus this (in AWS the worker's schedule runs " +
      "every minute; [recovery.md](recovery.md))",
  }),
};

const envSchema = envSchemaOf(SERVER_SETTINGS);

export interface ServerConfig {
  /** Default: `DEFAULT_MAX_MESSAGE_CHARS`. */
  maxMessageChars: number;
  /** Default: `DEFAULT_PORT`. */
  port: number;
  /** Local server: seconds between approval sweeps (`APPROVAL_SWEEP_SECONDS`). Default: `DEFAULT_APPROVAL_SWEEP_SECONDS`. */
  approvalSweepSeconds: number;
  /** Local server: seconds between turn recovery sweeps (`TURN_RECOVERY_SWEEP_SECONDS`). Default: `DEFAULT_TURN_RECOVERY_SWEEP_SECONDS`. */
  turnRecoverySweepSeconds: number;
}

export function loadServerConfig(env: Record<string, string | undefined>): ServerConfig {
  const e = withDefaults(SERVER_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return {
    maxMessageChars: e.MAX_MESSAGE_CHARS,
    port: e.PORT,
    approvalSweepSeconds: e.APPROVAL_SWEEP_SECONDS,
    turnRecoverySweepSeconds: e.TURN_RECOVERY_SWEEP_SECONDS,
  };
}
