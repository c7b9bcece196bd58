import { loadConfig } from "../config/config.js";
import { ValidationError } from "../errors.js";
import { databaseFor, setupDatabase } from "../setup-database.js";
import { createMongoClient } from "../store/mongo-client.js";

/** An index build on a large collection takes minutes, far beyond the request-sized default socket timeout. */
const SETUP_SOCKET_TIMEOUT_MS = 10 * 60_000;

/**
 * `npm run db:setup`: makes the indexes of the database `MONGODB_URI` and `MONGODB_DB` name, from a
 * machine that can reach it. In AWS the setup function does the same on every deploy.
 */
const config = loadConfig();
if (!config.mongodbUri) throw new ValidationError("MONGODB_URI is not set", [{ path: "MONGODB_URI", message: "required" }]);
const client = createMongoClient(config.mongodbUri, { ...config.mongo, socketTimeoutMs: SETUP_SOCKET_TIMEOUT_MS });
try {
  await setupDatabase(databaseFor(client, config));
  console.log(`database ${config.dbName} set up`);
} finally {
  await client.close();
}
