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
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

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

describe("startLocalServer during a MongoDB outage", () => {
  let proxy: TcpProxy;
  let down: TestServer;
  /** Far below the driver's default 30 s, as the README's configuration table promises. */
  const SELECTION_MS = 1_000;

  beforeAll(async () => {
    proxy = await startTcpProxy(Number(new URL(mongoUri().replace("mongodb://", "http://")).port));
    down = await startTestServer({
      MONGODB_URI: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`,
      MONGODB_SERVER_SELECTION_TIMEOUT_MS: String(SELECTION_MS),
    });
  });
  afterAll(async () => {
    await proxy.restore();
    await down.close();
    await proxy.close();
  });

  it("returns 503 with Retry-After within the server selection timeout, 200 from /healthz, and 503 from /readyz", async () => {
    const token = await down.token("alice");
    expect((await down.call("GET", "/readyz")).status).toBe(200);
    await proxy.cut();
    const started = performance.now();
    const listed = await down.call("GET", "/v1/conversations", { token });
    const elapsed = performance.now() - started;
    expect(listed.status).toBe(503);
    expect(Number(listed.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(elapsed).toBeLessThan(SELECTION_MS + 2_000);
    expect((await down.call("GET", "/healthz")).status).toBe(200);
    expect(await down.call("GET", "/readyz")).toMatchObject({ status: 503, body: { error: { code: "service_unavailable" } } });
  });

  it("returns ready again once the database is back, by itself", async () => {
    await proxy.restore();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await down.call("GET", "/readyz")).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status).toBe(200);
  });
});
