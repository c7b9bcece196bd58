import { MongoNetworkError, MongoServerSelectionError } from "mongodb";
import { ModelCredentialsError, ThreadwiseError, ValidationError } from "../errors.js";

/** Where to look for the fix of a configuration value. */
const CONFIGURATION_HINT = "see docs/configuration.md";

/** A MongoDB URI's scheme and credentials, up to the last `@` (a password may hold an unescaped `@` or `/`). */
const MONGODB_CREDENTIALS = /(mongodb(?:\+srv)?:\/\/)[^\s"'`]*@/g;

/** `host:port` of a MongoDB URI, never its credentials or options. */
function mongoHosts(uri: string | undefined): string {
  if (!uri) return "the embedded server";
  const authority = uri.replace(/^mongodb(?:\+srv)?:\/\//, "");
  const hosts = /^[^/?]+/.exec(authority.slice(authority.lastIndexOf("@") + 1))?.[0];
  return hosts && authority !== uri ? hosts : "MONGODB_URI";
}

/** `text` with the credentials of any MongoDB URI in it cut out: the driver's messages quote the URI they could not parse. */
function withoutMongoCredentials(text: string, uri: string | undefined): string {
  const known = uri?.includes("@") ? text.split(uri).join("mongodb://…@") : text;
  return known.replace(MONGODB_CREDENTIALS, "$1…@");
}

/** A MongoDB URI to print (the local server's start-up lines): its hosts, database and options, its user and password cut out. */
export function printableMongoUri(uri: string): string {
  return uri.replace(MONGODB_CREDENTIALS, "$1…@");
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
  return `threadwise could not start: ${withoutMongoCredentials(message.split("\n")[0], context.mongodbUri)}`;
}
