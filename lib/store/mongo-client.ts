import { MongoClient } from "mongodb";
import { DEFAULT_SERVER_SELECTION_TIMEOUT_MS, DEFAULT_SOCKET_TIMEOUT_MS } from "../config/database-config.js";

/**
 * How long opening a connection may take (a TLS handshake and authentication to Atlas in the same
 * region take well under a second); in poll mode also the timeout of each heartbeat, so a monitor
 * on a dropped connection notices within it (the driver's 30 s would outlast a request).
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
/**
 * How often the monitor checks each server. A heartbeat that times out on a silently dropped
 * connection resets the pool and interrupts the operations waiting on its stale connections
 * (the driver's `InterruptInUseConnections`), which are then retried on new ones: so the first
 * request after a drop answers within this and {@link DEFAULT_CONNECT_TIMEOUT_MS}, not after a
 * socket timeout per stale connection. A thawed Lambda container whose last check is older than
 * this checks at once. One small `hello` per server every 1.5 s per running container. The timeout stays at 3 s: a
 * heartbeat that a loaded server answers late would interrupt healthy operations.
 */
export const DEFAULT_HEARTBEAT_FREQUENCY_MS = 1_500;

export interface MongoClientOptions {
  /** Default: {@link DEFAULT_SERVER_SELECTION_TIMEOUT_MS}. */
  serverSelectionTimeoutMs?: number;
  /** Default: {@link DEFAULT_SOCKET_TIMEOUT_MS}. */
  socketTimeoutMs?: number;
  /** Most pooled connections per server. Default: the driver's (100); a Lambda container needs a few. */
  maxPoolSize?: number;
  /** Pooled connections idle this long are closed instead of reused. Default: never. */
  maxIdleTimeMs?: number;
  /** The driver's command events (`commandStarted`, …) on the client, for benchmarks that time the database. Default: off. */
  monitorCommands?: boolean;
}

/**
 * One client per container or process; the driver reconnects by itself when the server returns.
 * It connects on its first operation, not here. Servers are monitored by polling: one monitoring
 * connection per server instead of streaming's two, which matters when every Lambda container
 * holds its own (docs/deploying.md, "MongoDB from Lambda").
 */
export function createMongoClient(uri: string, options: MongoClientOptions = {}): MongoClient {
  return new MongoClient(uri, {
    appName: "threadwise",
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
    socketTimeoutMS: options.socketTimeoutMs ?? DEFAULT_SOCKET_TIMEOUT_MS,
    connectTimeoutMS: DEFAULT_CONNECT_TIMEOUT_MS,
    heartbeatFrequencyMS: DEFAULT_HEARTBEAT_FREQUENCY_MS,
    serverMonitoringMode: "poll",
    ...(options.maxPoolSize !== undefined ? { maxPoolSize: options.maxPoolSize } : {}),
    ...(options.maxIdleTimeMs !== undefined ? { maxIdleTimeMS: options.maxIdleTimeMs } : {}),
    ...(options.monitorCommands ? { monitorCommands: true } : {}),
  });
}
