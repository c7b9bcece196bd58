import { MongoClient } from "mongodb";

/**
 * How long an operation waits for a reachable server before failing. Short, so that an
 * outage answers 503 within an API Gateway request instead of hanging past it.
 */
export const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 5_000;

export interface MongoClientOptions {
  /** Default: {@link DEFAULT_SERVER_SELECTION_TIMEOUT_MS}. */
  serverSelectionTimeoutMs?: number;
}

/** One client per container or process; the driver reconnects by itself when the server returns. */
export function createMongoClient(uri: string, options: MongoClientOptions = {}): MongoClient {
  return new MongoClient(uri, {
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
    appName: "threadwise",
  });
}
