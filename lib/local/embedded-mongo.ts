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
  port: number;
  /** The server's process id. */
  pid: number | undefined;
  /** Settles when the server's process exits, asked to (`stop`) or not. */
  exited: Promise<{ code: number | null; signal: string | null }>;
  stop(): Promise<void>;
}

export interface EmbeddedMongoOptions {
  /** Port to listen on. Default: a free port chosen by the OS. */
  port?: number;
  /** Default: {@link DEFAULT_START_TIMEOUT_MS}. */
  startTimeoutMs?: number;
}

/** The npm package that ships the embedded server's binary, for Linux x64 with glibc only. */
export const EMBEDDED_MONGO_PACKAGE = "@jongodb/memory-server-bin-linux-x64-gnu";

/** What to do where that package has no build: one line, for `npm start` to print instead of a stack trace. */
export function noEmbeddedBuildMessage(platform: string = `${process.platform}-${process.arch}`): string {
  return (
    `the embedded MongoDB server has no build for ${platform} (only linux-x64 with glibc); start a MongoDB ` +
    "(docker run -d -p 27017:27017 mongo:8) and set MONGODB_URI=mongodb://127.0.0.1:27017"
  );
}

/**
 * The embedded server's binary. The package is an optional dependency, which npm leaves out on
 * other platforms; `resolve` finds it (a test passes one that does not).
 */
export function embeddedMongoBinary(resolve: (id: string) => string = createRequire(import.meta.url).resolve): string {
  try {
    return join(dirname(resolve(`${EMBEDDED_MONGO_PACKAGE}/package.json`)), "bin", "jongodb");
  } catch (error) {
    throw new EmbeddedMongoError(noEmbeddedBuildMessage(), { cause: error });
  }
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
 * on loopback, waits until it answers, and stops it with the process. It keeps its data in memory
 * only (the binary takes no data directory), so a restart starts empty.
 */
export async function startEmbeddedMongo(options: EmbeddedMongoOptions = {}): Promise<EmbeddedMongo> {
  const port = options.port ?? (await freePort());
  const child = spawn(embeddedMongoBinary(), ["--host=127.0.0.1", `--port=${port}`], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.resume();
  child.stderr?.resume();
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
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
    port,
    pid: child.pid,
    exited,
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
