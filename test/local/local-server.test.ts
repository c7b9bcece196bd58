import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../lib/config/config.js";
import { LocalServerError, startLocalServer } from "../../lib/local/local-server.js";
import { silentLogger } from "../../lib/logger.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { mongoUri } from "../support/mongo.js";

let api: TestServer;

const hasIpv6Loopback = await new Promise<boolean>((resolve) => {
  const probe = createServer();
  probe.once("error", () => resolve(false));
  probe.listen(0, "::1", () => probe.close(() => resolve(true)));
});

beforeAll(async () => {
  api = await startTestServer();
});
afterAll(() => api.close());

describe("startLocalServer", () => {
  it("throws LocalServerError naming the port when it is taken", async () => {
    const port = Number(new URL(api.url).port);
    const config = loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: `busy_${randomUUID().slice(0, 8)}` });
    const localDir = await mkdtemp(join(tmpdir(), "threadwise-keys-"));
    const attempt = startLocalServer(config, { port, localDir, app: { logger: silentLogger, tools: [] } });
    await expect(attempt).rejects.toBeInstanceOf(LocalServerError);
    await expect(attempt).rejects.toThrow(`127.0.0.1:${port}`);
  });

  // Skipped, and reported as skipped, on a machine without IPv6 loopback: it cannot pass there without checking anything.
  it.runIf(hasIpv6Loopback)("answers on IPv6 loopback too, where the machine has it", async () => {
    const res = await fetch(`http://[::1]:${new URL(api.url).port}/healthz`);
    expect(res.status).toBe(200);
  });
});
