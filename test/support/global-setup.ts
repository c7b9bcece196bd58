import { startEmbeddedMongo, type EmbeddedMongo } from "../../lib/local/embedded-mongo.js";

let embedded: EmbeddedMongo | undefined;

/** One embedded MongoDB for the whole run, unless MONGODB_URI names a real one. */
export async function setup(): Promise<void> {
  if (process.env.MONGODB_URI) return;
  embedded = await startEmbeddedMongo();
  process.env.MONGODB_URI = embedded.uri;
}

export async function teardown(): Promise<void> {
  await embedded?.stop();
}
