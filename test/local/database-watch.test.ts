import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../lib/config/config.js";
import { DatabaseWatch } from "../../lib/local/database-watch.js";
import type { EmbeddedMongo } from "../../lib/local/embedded-mongo.js";
import { loadOrCreateLocalKeys, mintLocalToken } from "../../lib/local/local-keys.js";
import { startLocalServer, type LocalServer } from "../../lib/local/local-server.js";
import type { StructuredLogger } from "../../lib/logger.js";
import { startTestServer } from "../support/api-client.js";
import { dropKnownCollections } from "../support/drop-collections.js";

/** A logger that keeps what it was told, to assert the one line each event writes. */
function recordingLogger(): StructuredLogger & { lines: { level: string; message: string }[] } {
  const lines: { level: string; message: string }[] = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  return { lines, info: at("info"), warn: at("warn"), error: at("error"), debug: at("debug") } as never;
}

describe("DatabaseWatch", () => {
  describe("the local server on its embedded database", () => {
    let server: LocalServer | undefined;
    afterAll(() => server?.close());

    it("starts the embedded server again when it dies, sets it up, and the next turn answers 200", async () => {
      const logger = recordingLogger();
      const localDir = await mkdtemp(join(tmpdir(), "threadwise-keys-"));
      // No MONGODB_URI: the local server starts its own embedded server, as `npm start` does.
      const config = loadConfig({ MONGODB_DB: `watch_${randomUUID().slice(0, 8)}`, MONGODB_SERVER_SELECTION_TIMEOUT_MS: "1000" });
      server = await startLocalServer(config, { port: 0, localDir, app: { logger, tools: [] } });
      const token = await mintLocalToken(await loadOrCreateLocalKeys(localDir), { user: "alice" });
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${server!.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          ...(body !== undefined && { body: JSON.stringify(body) }),
        });
      expect((await call("POST", "/v1/conversations")).status).toBe(201);

      const first = server.databaseWatch.embedded!;
      process.kill(first.pid!, "SIGKILL");
      await first.exited;

      await vi.waitFor(async () => expect((await call("GET", "/readyz")).status).toBe(200), { timeout: 30_000, interval: 200 });
      expect(server.databaseWatch.embedded!.pid).not.toBe(first.pid);
      const created = await call("POST", "/v1/conversations");
      expect(created.status).toBe(201);
      const { conversationId } = (await created.json()) as { conversationId: string };
      const asked = await call("POST", `/v1/conversations/${conversationId}/messages`, { content: "My name is Ada." });
      expect(asked.status).toBe(200);
      expect(logger.lines.filter((l) => l.level === "error").map((l) => l.message)).toEqual([
        "the embedded MongoDB server exited; starting it again, empty, on the same port",
      ]);
    });
  });

  describe("a database behind MONGODB_URI", () => {
    it("sets up again, within its interval, a database that lost its set-up (a fresh one appeared)", async () => {
      const api = await startTestServer();
      try {
        expect((await api.call("GET", "/readyz")).status).toBe(200);
        // What a fresh MongoDB behind the same URI looks like (the embedded server has no dropDatabase).
        await dropKnownCollections(api.db);
        await vi.waitFor(async () => expect((await api.call("GET", "/readyz")).status).toBe(200), { timeout: 10_000, interval: 100 });
        const indexes = await api.db.collection("turns").indexes();
        expect(indexes.length).toBeGreaterThan(1);
      } finally {
        await api.close();
      }
    });
  });

  describe("stop", () => {
    it("does not start an embedded server again once stopped", async () => {
      let exit!: (value: { code: number | null; signal: string | null }) => void;
      const embedded: EmbeddedMongo = {
        uri: "mongodb://127.0.0.1:1",
        port: 1,
        pid: undefined,
        exited: new Promise((resolve) => (exit = resolve)),
        stop: async () => undefined,
      };
      const restart = vi.fn();
      const database = { isSetUp: async () => true } as never;
      const watch = new DatabaseWatch({ database, embedded, logger: recordingLogger(), restart, intervalMs: 60_000 });
      watch.start();
      await watch.stop();
      exit({ code: 0, signal: null });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(restart).not.toHaveBeenCalled();
    });
  });
});
