/**
 * Re-encryption benchmark (a part benchmark: the `ContentResealer` alone, not a turn): how fast a
 * tenant's values are re-sealed under its new key after a rotation, on the embedded MongoDB server
 * with local key files. Writes `--values` sealed messages of the tenant spread over conversations,
 * and as many of another tenant (read and skipped, never decrypted), rotates, runs the re-encryption
 * from `effectiveAt`, then runs a second pass over the same data (nothing left to re-seal).
 *
 *   npm run bench:reencryption [-- --values 5000]
 */
import { mkdtemp } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { apiPrincipal } from "../lib/auth/principal.js";
import { LocalTenantKeys } from "../lib/crypto/local-tenant-keys.js";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { COLLECTIONS } from "../lib/store/collections.js";
import { ThreadwiseDatabase } from "../lib/store/database.js";

const PER_CONVERSATION = 50;

async function fill(database: ThreadwiseDatabase, tenant: string, values: number): Promise<void> {
  const messages = database.db.collection<{ _id: string }>(COLLECTIONS.messages);
  for (let start = 0; start < values; start += PER_CONVERSATION) {
    const { _id: conversationId } = await database.conversations.create(apiPrincipal("bench", tenant));
    const docs = [];
    for (let i = start; i < Math.min(values, start + PER_CONVERSATION); i++) {
      const _id = `${conversationId}:${i}`;
      const text = `question ${i} of ${tenant}: ${"the quarterly numbers by region ".repeat(8)}`;
      docs.push({
        _id,
        conversationId,
        role: "user",
        content: await database.cipher.sealText(conversationId, { collection: COLLECTIONS.messages, id: _id, field: "content" }, text),
      });
    }
    await messages.insertMany(docs);
  }
}

async function pass(database: ThreadwiseDatabase, now: () => Date) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const outcome = await database.reseals.run({ issuer: "api", tenant: "acme" }, { now });
  const used = process.cpuUsage(cpu);
  if (outcome.status !== "done") throw new Error(`re-encryption ended ${outcome.status}`);
  return { wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000, counts: outcome.job.counts };
}

async function main(): Promise<void> {
  const options = { values: { type: "string", default: "5000" } } as const;
  const { values: args } = parseCliArgs(optionsUsage("bench:reencryption", options), { options });
  const values = Number(args.values);
  const mongo = await startEmbeddedMongo();
  const client = new MongoClient(mongo.uri);
  await client.connect();
  try {
    const keys = new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-bench-keys-")));
    const database = new ThreadwiseDatabase(client, { dbName: "bench_reencryption", contentKeys: keys });
    await database.setup();
    await fill(database, "acme", values);
    await fill(database, "globex", values);
    const { effectiveAt } = await database.rotateTenantKey("api", "acme");
    const later = () => new Date(effectiveAt.getTime() + 1_000);
    const first = await pass(database, later);
    await database.reseals.schedule(
      { issuer: "api", tenant: "acme" },
      (await keys.currentKeys()).find((k) => k.tenant.tenant === "acme")?.keyId ?? "",
      new Date(0),
    );
    const second = await pass(database, later);
    const rate = (ms: number, n: number) => Math.round((n / ms) * 1000).toLocaleString("en");
    const row = (name: string, p: Awaited<ReturnType<typeof pass>>) => [
      name,
      p.counts.examined,
      p.counts.resealed,
      p.wallMs.toFixed(0),
      p.cpuMs.toFixed(0),
      rate(p.wallMs, p.counts.resealed),
      rate(p.wallMs, p.counts.examined),
    ];
    const lines = [
      `re-encryption of ${values} values of one tenant among ${2 * values} messages (load average ${loadavg()[0].toFixed(1)})`,
      "| pass | documents examined | fields re-sealed | wall ms | CPU ms | re-sealed values/s | documents examined/s |",
      "|---|---|---|---|---|---|---|",
      ...[row("after the rotation", first), row("again (nothing to do)", second)].map((cells) => `| ${cells.join(" | ")} |`),
    ];
    console.log(lines.join("\n"));
  } finally {
    await client.close();
    await mongo.stop();
  }
}

await main();
