import { MongoNetworkError, MongoServerSelectionError } from "mongodb";
import { ModelCredentialsError, ThreadwiseError, ValidationError } from "../errors.js";

/** Where to look for the fix of a configuration value. */
const CONFIGURATION_HINT = 'see "Configuration" in the README';

/** `host:port` of a MongoDB URI, never its credentials or options. */
function mongoHosts(uri: string | undefined): string {
  if (!uri) return "the embedded server";
  const hosts = /^mongodb(?:\+srv)?:\/\/(?:[^@/]*@)?([^/?]+)/.exec(uri)?.[1];
  return hosts ?? "MONGODB_URI";
}

/**
 * One line that says what went wrong at start-up and what to do about it, for the local server
 * and the CLIs. Never a stack trace, never a secret (a MongoDB URI shows its hosts only).
 */
export function explainStartupError(
  error: unknown,
  context: {
    mongodbUri?: string;
    serverSelectionTimeoutMs?: number;
    /** Whether unsetting `MONGODB_URI` starts the embedded server (`npm start`), or the command needs a real one (`npm run db:setup`). Default: true. */
    embeddedFallback?: boolean;
  } = {},
): string {
  if (error instanceof ValidationError) {
    const [first, ...rest] = error.details ?? [];
    const more = rest.length > 0 ? ` (and ${rest.length} more)` : "";
    const what = first ? `${first.path || "value"}: ${first.message}` : error.message;
    return `${error.message}: ${what}${more}; fix it in the environment (${CONFIGURATION_HINT}).`;
  }
  if (error instanceof MongoServerSelectionError || error instanceof MongoNetworkError) {
    const within = context.serverSelectionTimeoutMs ? ` within ${context.serverSelectionTimeoutMs} ms` : "";
    return (
      `cannot reach MongoDB at ${mongoHosts(context.mongodbUri)}${within}; start it or fix MONGODB_URI ` +
      `(${context.embeddedFallback === false ? "" : "unset it to use the embedded server; "}MONGODB_SERVER_SELECTION_TIMEOUT_MS sets the wait).`
    );
  }
  if (error instanceof ModelCredentialsError || error instanceof ThreadwiseError) return error.message;
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return `threadwise could not start: ${message.split("\n")[0]}`;
}
