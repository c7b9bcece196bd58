import { MongoClient } from "mongodb";
import { describe, expect, it } from "vitest";
import { EmbeddedMongoError, startEmbeddedMongo } from "../../lib/local/embedded-mongo.js";

/** Whether a server answers a ping at `uri` within a short wait. */
async function answers(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 500 });
  try {
    await client.db("admin").command({ ping: 1 });
    return true;
  } catch {
    return false;
  } finally {
    await client.close();
  }
}

describe("startEmbeddedMongo", { timeout: 60_000 }, () => {
  it("returns a loopback server that answers, and stops it (a second stop changes nothing)", async () => {
    const server = await startEmbeddedMongo();
    expect(server.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/\?directConnection=true$/);
    expect(await answers(server.uri)).toBe(true);
    await server.stop();
    expect(await answers(server.uri)).toBe(false);
    await server.stop();
  });

  it("throws EmbeddedMongoError when the server does not answer in time", async () => {
    await expect(startEmbeddedMongo({ startTimeoutMs: 0 })).rejects.toBeInstanceOf(EmbeddedMongoError);
  });
});
