import { describe, expect, it } from "vitest";
import {
  DEFAULT_CHECKPOINTS_KEPT,
  DEFAULT_DB_NAME,
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_RETENTION_DAYS,
  loadDatabaseConfig,
} from "../../lib/config/database-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("database config", () => {
  describe("loadDatabaseConfig", () => {
    it("returns the defaults when nothing is set", () => {
      expect(loadDatabaseConfig({})).toMatchObject({
        mongodbUri: undefined,
        dbName: DEFAULT_DB_NAME,
        leaseTtlMs: DEFAULT_LEASE_TTL_MS,
        retentionDays: DEFAULT_RETENTION_DAYS,
        checkpointsKept: DEFAULT_CHECKPOINTS_KEPT,
      });
    });

    it("returns the client's pool and timeouts as set", () => {
      const config = loadDatabaseConfig({ MONGODB_MAX_POOL_SIZE: "4", MONGODB_MAX_IDLE_TIME_MS: "60000", MONGODB_SOCKET_TIMEOUT_MS: "900000" });
      expect(config.mongo).toMatchObject({ maxPoolSize: 4, maxIdleTimeMs: 60_000, socketTimeoutMs: 900_000 });
    });

    it("throws ValidationError naming the variable for a value that is not a positive number", () => {
      expect(() => loadDatabaseConfig({ RETENTION_DAYS: "0" })).toThrow(ValidationError);
      expect(() => loadDatabaseConfig({ LEASE_TTL_MS: "soon" })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "LEASE_TTL_MS" })] }),
      );
    });
  });
});
