import { MongoError, MongoNetworkError, MongoNetworkTimeoutError, MongoServerError, MongoServerSelectionError } from "mongodb";

/**
 * Whether an error means the database could not be reached (rather than that it refused the
 * operation): the driver's "unreachable" errors and those it labels retryable (a primary stepping
 * down), looked for through wrappers (Powertools, LangGraph, and the driver's own
 * `MongoBulkWriteError`, which keeps the network error it failed on as its `errorResponse`).
 */
export function isMongoUnavailable(error: unknown): boolean {
  let e = error;
  for (let depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e instanceof MongoServerSelectionError || e instanceof MongoNetworkError || e instanceof MongoNetworkTimeoutError) return true;
    if (e instanceof MongoError && (e.hasErrorLabel("RetryableWriteError") || e.hasErrorLabel("ResetPool"))) return true;
    e = e instanceof MongoServerError && e.errorResponse instanceof Error ? e.errorResponse : e.cause;
  }
  return false;
}
