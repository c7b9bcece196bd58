/**
 * What one write costs on the embedded MongoDB-compatible server as the collection written grows:
 * an update by `_id`, an insert of a new document, a delete and a find by `_id` in collections of
 * 1,000, 4,000 and 8,000 documents of 300 bytes, then a 1-document collection's update with 6,000
 * documents elsewhere (another database, then another collection of the same database). Means of
 * 10. Every write that adds or changes a document checks the collection's unique indexes (`_id`'s
 * at least) by comparing each document with every one before it, so its time grows with the square
 * of the collection's documents, whatever the document or the index. See docs/storage.md.
 *
 *   npx tsx bench/embedded-write-cost.ts
 */
import { MongoClient } from "mongodb";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";

const REPEATS = 10;
const embedded = await startEmbeddedMongo();
const client = new MongoClient(embedded.uri);
await client.connect();

async function meanMs(run: (k: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  for (let k = 0; k < REPEATS; k++) await run(k);
  return (performance.now() - started) / REPEATS;
}

async function fill(db: string, name: string, count: number): Promise<void> {
  const collection = client.db(db).collection<{ _id: string; pad: string }>(name);
  for (let i = 0; i < count; i += 1000) await collection.insertMany(Array.from({ length: 1000 }, (_, j) => ({ _id: `d${i + j}`, pad: "x".repeat(300) })));
}

for (const count of [1000, 4000, 8000]) {
  await fill("sized", `c${count}`, count);
  const collection = client.db("sized").collection<{ _id: string; v?: number }>(`c${count}`);
  const update = await meanMs((k) => collection.updateOne({ _id: "d7" }, { $set: { v: k } }));
  const insert = await meanMs((k) => collection.insertOne({ _id: `new${k}` }));
  const remove = await meanMs((k) => collection.deleteOne({ _id: `new${k}` }));
  const find = await meanMs(() => collection.findOne({ _id: "d7" }));
  process.stdout.write(
    `${count} documents: update by _id ${update.toFixed(1)} ms, insert ${insert.toFixed(1)} ms, ` +
      `delete by _id ${remove.toFixed(1)} ms, find by _id ${find.toFixed(1)} ms\n`,
  );
}
const small = client.db("other").collection<{ _id: string; v: number }>("small");
await small.insertOne({ _id: "s", v: 0 });
const smallUpdate = () => meanMs((k) => small.updateOne({ _id: "s" }, { $set: { v: k } }));
process.stdout.write(`1-document collection, 13,000 documents in another database: update ${(await smallUpdate()).toFixed(1)} ms\n`);
await fill("other", "big", 6000);
process.stdout.write(`and 6,000 more in another collection of its database: update ${(await smallUpdate()).toFixed(1)} ms\n`);
await client.close();
await embedded.stop();
