/**
 * Encryption benchmark: encryption's share of turn time, through `createApp` on the embedded
 * MongoDB server with the offline model. Two apps in one process, one encrypting contents (a
 * local key file per tenant) and one with `CONTENT_ENCRYPTION=off`, each over a database of its
 * own, run the same conversation turn for turn, interleaved so that both see the same machine
 * load. A turn in five calls a tool whose output is offloaded.
 *
 *   npm run bench:encryption [-- --turns 60]
 */
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { z } from "zod";
import { createApp, type App } from "../lib/app.js";
import { apiPrincipal } from "../lib/auth/principal.js";
import { loadConfig } from "../lib/config/config.js";
import { LocalTenantKeys } from "../lib/crypto/local-tenant-keys.js";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import type { ToolDefinition } from "../lib/tools/tool.js";

const caller = { principal: apiPrincipal("bench", "bench-tenant"), roles: [] };

const lookUp: ToolDefinition = {
  name: "look_up",
  description: "Reads a report.",
  schema: z.object({ key: z.string() }),
  sideEffects: false,
  run: async ({ key }: { key: string }) => `report on ${key}:\n${Array.from({ length: 400 }, (_, i) => `${i},north,product-${i % 37},${i * 13}`).join("\n")}`,
};

interface Sample {
  wallMs: number;
  cpuMs: number;
}

async function turn(app: App, conversationId: string, content: string): Promise<Sample> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const turnId = randomUUID();
  await app.runner.run({ conversationId, caller, content, turnId });
  const used = process.cpuUsage(cpu);
  return { wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000 };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  const options = { turns: { type: "string", default: "60" } } as const;
  const { values } = parseCliArgs(optionsUsage("bench:encryption", options), { options });
  const turns = Number(values.turns);
  const mongo = await startEmbeddedMongo();
  const client = new MongoClient(mongo.uri);
  await client.connect();
  const keysDir = await mkdtemp(join(tmpdir(), "threadwise-bench-keys-"));
  const appFor = (dbName: string, encrypted: boolean) =>
    createApp(loadConfig({ MONGODB_URI: mongo.uri, MONGODB_DB: dbName }), {
      mongoClient: client,
      tools: [lookUp],
      ...(encrypted && { contentKeys: new LocalTenantKeys(keysDir) }),
    });
  const on = await appFor("bench_encryption_on", true);
  const off = await appFor("bench_encryption_off", false);
  const samples: Record<"on" | "off", Sample[]> = { on: [], off: [] };
  const load: number[] = [];
  try {
    const ids = {
      on: (await on.database.conversations.create(caller.principal))._id,
      off: (await off.database.conversations.create(caller.principal))._id,
    };
    for (let i = 0; i < turns; i++) {
      const content = i % 5 === 4 ? `look_up {"key": "region ${i}"}` : `question ${i}: how did the quarter go for product ${i % 37}?`;
      // Alternate which goes first, so neither always runs on a warmer machine.
      const order: ("on" | "off")[] = i % 2 === 0 ? ["on", "off"] : ["off", "on"];
      for (const which of order) samples[which].push(await turn(which === "on" ? on : off, ids[which], content));
      load.push(loadavg()[0]);
    }
  } finally {
    await on.close();
    await off.close();
    await client.close();
    await mongo.stop();
  }
  // The first turns warm the process (JIT, caches, the first data key): the figures are of the rest.
  const warm = (s: Sample[]) => s.slice(Math.min(10, Math.floor(s.length / 4)));
  const row = (which: "on" | "off") => ({ wall: median(warm(samples[which]).map((s) => s.wallMs)), cpu: median(warm(samples[which]).map((s) => s.cpuMs)) });
  const [a, b] = [row("on"), row("off")];
  const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
  process.stdout.write(
    [
      `turns: ${turns} per app (the first ${Math.min(10, Math.floor(turns / 4))} left out), ` +
        `load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}`,
      "| per turn, median | encryption on | encryption off | on / off |",
      "|---|---:|---:|---:|",
      `| wall time | ${fmt(a.wall)} | ${fmt(b.wall)} | ${(a.wall / b.wall).toFixed(2)} |`,
      `| CPU time (this process: app and embedded-server client) | ${fmt(a.cpu)} | ${fmt(b.cpu)} | ${(a.cpu / b.cpu).toFixed(2)} |`,
      "",
    ].join("\n"),
  );
}

await main();
