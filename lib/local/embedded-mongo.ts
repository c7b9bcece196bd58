import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { MongoClient } from "mongodb";
import { ThreadwiseError } from "../errors.js";

/** How long to wait for the embedded server to answer a ping. */
export const DEFAULT_START_TIMEOUT_MS = 20_000;

export class EmbeddedMongoError extends ThreadwiseError {
  override name = "EmbeddedMongoError";
}

export interface EmbeddedMongo {
  uri: string;
  stop(): Promise<void>;
}

export interface EmbeddedMongoOptions {
  /** Port to listen on. Default: a free port chosen by the OS. */
  port?: number;
  /** Default: {@link DEFAULT_START_TIMEOUT_MS}. */
  startTimeoutMs?: number;
}

function binaryPath(): string {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("@jongodb/memory-server-bin-linux-x64-gnu/package.json");
  return join(dirname(pkg), "bin", "jongodb");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

async function waitUntilAnswering(uri: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new EmbeddedMongoError(`embedded MongoDB exited with code ${child.exitCode}`);
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 500, directConnection: true });
    try {
      await client.connect();
      await client.db("admin").command({ ping: 1 });
      return;
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.close().catch(() => undefined);
    }
  }
  throw new EmbeddedMongoError("embedded MongoDB did not answer in time", { cause: lastError });
}

/**
 * Starts the MongoDB-compatible server shipped in `@jongodb/memory-server-bin-linux-x64-gnu`
 * on loopback, waits until it answers, and stops it with the process.
 */
export async function startEmbeddedMongo(options: EmbeddedMongoOptions = {}): Promise<EmbeddedMongo> {
  const port = options.port ?? (await freePort());
  const child = spawn(binaryPath(), ["--host=127.0.0.1", `--port=${port}`], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.resume();
  child.stderr?.resume();
  const stopOnExit = () => child.kill("SIGKILL");
  process.once("exit", stopOnExit);
  const uri = `mongodb://127.0.0.1:${port}/?directConnection=true`;
  try {
    await waitUntilAnswering(uri, child, options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return {
    uri,
    async stop() {
      process.removeListener("exit", stopOnExit);
      if (child.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 2_000).unref();
      });
    },
  };
}
