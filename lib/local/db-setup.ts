import { loadConfig, type Config } from "../config/config.js";
import { ValidationError } from "../errors.js";
import { createTenantKeys } from "../crypto/create-tenant-keys.js";
import { databaseFor, setupDatabase } from "../setup-database.js";
import { DEFAULT_LOCAL_DIR } from "./local-keys.js";
import { createMongoClient } from "../store/mongo-client.js";
import { explainStartupError } from "./startup-error.js";

/** An index build on a large collection takes minutes, far beyond the request-sized default socket timeout. */
const SETUP_SOCKET_TIMEOUT_MS = 10 * 60_000;

/**
 * `npm run db:setup`: makes the indexes of the database `MONGODB_URI` and `MONGODB_DB` name, from a
 * machine that can reach it. In AWS the setup function does the same on every deploy. A mistake is
 * one line and exit code 1, as `npm start` answers it (README, "Troubleshooting").
 */
let config: Config | undefined;
try {
  config = loadConfig();
  if (!config.mongodbUri) throw new ValidationError("invalid configuration", [{ path: "MONGODB_URI", message: "required (the database to set up)" }]);
  const client = createMongoClient(config.mongodbUri, { ...config.mongo, socketTimeoutMs: SETUP_SOCKET_TIMEOUT_MS });
  try {
    // Connected first, so that an unreachable server is named as such, not as 14 failed index builds.
    await client.connect();
    // Contents stored clear by earlier releases are encrypted here (docs/security.md, "Existing deployments").
    const keys = createTenantKeys(config.encryption, { db: client.db(config.dbName), localDir: DEFAULT_LOCAL_DIR });
    await setupDatabase(databaseFor(client, config, undefined, keys));
  } finally {
    await client.close();
  }
  console.log(`database ${config.dbName} set up`);
} catch (error) {
  const context = { mongodbUri: config?.mongodbUri, serverSelectionTimeoutMs: config?.mongo.serverSelectionTimeoutMs, embeddedFallback: false };
  console.error(explainStartupError(error, context));
  process.exit(1);
}
