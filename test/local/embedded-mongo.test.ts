import { MongoClient } from "mongodb";
import { describe, expect, it } from "vitest";
import { EmbeddedMongoError, embeddedMongoBinary, noEmbeddedBuildMessage, startEmbeddedMongo } from "../../lib/local/embedded-mongo.js";

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

describe("embeddedMongoBinary", () => {
  it("throws EmbeddedMongoError saying in one line what to do where npm left the Linux-only package out", () => {
    const missing = () => {
      throw Object.assign(new Error("Cannot find module '@jongodb/memory-server-bin-linux-x64-gnu/package.json'"), { code: "MODULE_NOT_FOUND" });
    };
    expect(() => embeddedMongoBinary(missing)).toThrow(EmbeddedMongoError);
    expect(() => embeddedMongoBinary(missing)).toThrow(noEmbeddedBuildMessage());
    expect(noEmbeddedBuildMessage("darwin-arm64")).toBe(
      "the embedded MongoDB server has no build for darwin-arm64 (only linux-x64 with glibc); start a MongoDB " +
        "(docker run -d -p 27017:27017 mongo:8) and set MONGODB_URI=mongodb://127.0.0.1:27017",
    );
  });

  it("returns the binary of the installed package", () => {
    expect(embeddedMongoBinary()).toMatch(/@jongodb\/memory-server-bin-linux-x64-gnu\/bin\/jongodb$/);
  });
});
