/**
 * Turn hops (a part measurement, not a benchmark of time): the modules of `functions/` and `lib/`
 * that one `POST /v1/conversations/{id}/messages` walks through, read from the call stacks (V8's
 * async stack traces) at every database write the turn makes (the limits' counters, the lease, the
 * turn and message records, checkpoints, events, the recall index, the stored answer) and at the
 * model call.
 *
 *   npx tsx bench/turn-hops.ts
 *
 * Prints the modules in the order first met, how many there are, and which modules call into
 * `lib/limits` for the turn (the owner of its admission, or several).
 */
import { randomUUID } from "node:crypto";
import { Collection, MongoClient } from "mongodb";
import { createHttpHandler } from "../lib/api/http-handler.js";
import { createApp } from "../lib/app.js";
import { apiPrincipal } from "../lib/auth/principal.js";
import { loadConfig } from "../lib/config/config.js";
import { LocalChatModel } from "../lib/agent/local-chat-model.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";

Error.stackTraceLimit = Number.POSITIVE_INFINITY;
const modules: string[] = [];
/** For each write to the limits' counters: the module outside `lib/limits` that called into it, and into which module. */
const entries = new Map<string, number>();
let recording = false;
const root = `${process.cwd()}/`;
function record(limits: boolean): void {
  if (!recording) return;
  const frames: string[] = [];
  for (const line of new Error().stack?.split("\n") ?? []) {
    const file = /\(?((?:file:\/\/)?\/[^():]+\.ts):\d+:\d+\)?$/.exec(line)?.[1]?.replace("file://", "");
    if (file?.startsWith(root) && /^(lib|functions)\//.test(file.slice(root.length))) frames.push(file.slice(root.length));
  }
  for (const path of [...frames].reverse()) if (!modules.includes(path)) modules.push(path);
  const caller = frames.findIndex((f) => !f.startsWith("lib/limits/"));
  if (limits && caller > 0) entries.set(`${frames[caller]} -> ${frames[caller - 1]}`, (entries.get(`${frames[caller]} -> ${frames[caller - 1]}`) ?? 0) + 1);
}

// Every write the turn makes (the limits' among them), and the model call.
const WRITES = ["bulkWrite", "insertOne", "insertMany", "updateOne", "updateMany", "replaceOne", "findOneAndUpdate", "deleteOne", "deleteMany"] as const;
for (const method of WRITES) {
  const original = Collection.prototype[method] as (...args: unknown[]) => unknown;
  (Collection.prototype as unknown as Record<string, unknown>)[method] = function (this: Collection, ...args: unknown[]) {
    record(this.collectionName === "limit_counters");
    return original.apply(this, args);
  };
}
const generate = LocalChatModel.prototype._generate;
LocalChatModel.prototype._generate = function (...args: Parameters<typeof generate>) {
  record(false);
  return generate.apply(this, args);
};

const mongo = await startEmbeddedMongo();
const client = new MongoClient(mongo.uri);
await client.connect();
const config = loadConfig({ MONGODB_URI: mongo.uri, MONGODB_DB: `bench_hops_${randomUUID().slice(0, 8)}`, LIMIT_USER_CONCURRENT_TURNS: "3" });
const app = await createApp(config, { mongoClient: client, tools: [] });
const route = createHttpHandler(app, config, { authenticate: async () => ({ principal: apiPrincipal("hops", "acme"), roles: [] }) });
const post = (path: string, body: unknown) =>
  route({ method: "POST", path, query: {}, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

const { conversationId } = JSON.parse((await post("/v1/conversations", {})).body);
recording = true;
const answered = await post(`/v1/conversations/${conversationId}/messages`, { content: "hello" });
recording = false;
console.log(`status ${answered.status}`);
for (const module of modules) console.log(module);
console.log(`${modules.length} modules, in ${new Set(modules.map((m) => m.split("/").slice(0, -1).join("/"))).size} folders`);
console.log("calls into lib/limits (caller -> limits module: writes):");
for (const [entry, count] of entries) console.log(`  ${entry}: ${count}`);
await app.close();
await client.close();
await mongo.stop();
