import { CredentialsMissingError } from "../config/credentials.js";
import type { StructuredLogger } from "../logger.js";
import { errorResponse } from "./error-response.js";

/**
 * The one `onError` of the router for every adapter (the functions, the local server): server
 * faults only, with names and numbers, never request or message contents. Empty keys of the
 * credentials secrets are named, so a new deployment says what it lacks.
 */
export function serverErrorLogger(logger: StructuredLogger): (error: unknown, request: { method: string; path: string }) => void {
  return (error, request) => {
    if (errorResponse(error).status < 500) return;
    const route = request.path.replace(/[0-9a-f-]{36}/gi, "{id}");
    if (error instanceof CredentialsMissingError) return logger.error("credentials missing", { missing: error.missing, method: request.method, route });
    logger.error("request failed", { error: error instanceof Error ? error.name : "unknown", method: request.method, route });
  };
}
