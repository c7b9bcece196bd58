import type { MongoClient } from "mongodb";
import { ChannelEventDeduper } from "./channels/channel-event-deduper.js";
import type { Clock } from "./clock.js";
import type { Config } from "./config/config.js";
import type { TenantKeys } from "./crypto/tenant-keys.js";
import { ThreadwiseDatabase } from "./store/database.js";
import { UsageLedger } from "./limits/usage-ledger.js";
import { McpOAuthStore } from "./mcp/oauth/mcp-oauth-store.js";
import { AuditLog } from "./audit/audit-log.js";
import { Eraser } from "./lifecycle/eraser.js";

/**
 * The stores of the configured database over `client`, as the app, the setup function and `npm run db:setup` use them.
 * `contentKeys`: tenants' keys for contents at rest (`createTenantKeys`); without them contents are stored clear.
 */
export function databaseFor(client: MongoClient, config: Config, clock?: Clock, contentKeys?: TenantKeys): ThreadwiseDatabase {
  return new ThreadwiseDatabase(client, {
    dbName: config.dbName,
    leaseTtlMs: config.leaseTtlMs,
    retentionDays: config.retentionDays,
    checkpointsKept: config.checkpointsKept,
    clock,
    contentKeys,
    dataKeyMaxAgeMs: config.encryption.dataKeyMaxAgeSeconds * 1000,
  });
}

/**
 * Every index of the database, the channel events' TTL index included, recorded as done. The
 * deploy step in AWS (the setup function), `npm run db:setup`, and the local server at start.
 */
export async function setupDatabase(database: ThreadwiseDatabase): Promise<void> {
  await database.setup([
    () => new ChannelEventDeduper(database.db).setup(),
    // Only the indexes: the ledger's timings do not matter here.
    () => new UsageLedger(database.db, { reservationTtlMs: 0, slotTtlMs: 0 }).setup(),
    () => new McpOAuthStore(database.db).setup(),
    // Only the indexes: the retention is each record's own expiry.
    () => new AuditLog(database.db, { retentionDays: 1 }).setup(),
    () => new Eraser({ database, auditRetentionDays: 1 }).setup(),
  ]);
}

/**
 * Sets the database up unless it records that this version's indexes were made: one read on a
 * cold start. It does the work only for a database the deploy step has not reached (a secret
 * filled in after the deploy). Returns whether it set the database up.
 */
export async function ensureDatabaseSetUp(database: ThreadwiseDatabase): Promise<boolean> {
  if (await database.isSetUp()) return false;
  await setupDatabase(database);
  return true;
}
