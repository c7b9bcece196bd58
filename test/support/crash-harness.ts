import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { MongoClient, type Db } from "mongodb";
import { loadOrCreateLocalKeys, mintLocalToken, type LocalKeys } from "../../lib/local/local-keys.js";
import { dropKnownCollections } from "./drop-collections.js";
import { mongoUri } from "./mongo.js";
import { APPROVER_ROLE, EFFECTS_COLLECTION } from "./crash-server.constants.js";

/** Short, so a crashed holder's conversation frees within seconds: the test's TTL and sweep. */
export const CRASH_LEASE_TTL_MS = 1_500;
export const CRASH_SWEEP_SECONDS = 1;
/** A tool call's in-progress record is presumed abandoned after this. */
export const CRASH_TOOL_TIMEOUT_MS = 1_500;
/** What "within the TTL plus one sweep" allows on a loaded machine: the bound, a redelivery's visibility, and the model's work. */
export const RECOVERY_DEADLINE_MS = CRASH_LEASE_TTL_MS + CRASH_SWEEP_SECONDS * 1000 + 8_000;

export interface CrashServer {
  url: string;
  child: ChildProcessWithoutNullStreams;
  exited: Promise<NodeJS.Signals | number | null>;
  /** Resolves once the server printed `line` (or rejects once it exited). */
  printed(line: string): Promise<void>;
}

export interface CrashCluster {
  db: Db;
  dbName: string;
  keys: LocalKeys;
  /** The running server; replaced by `restart`. */
  server: CrashServer;
  /** Starts the server (after a crash, or killing the running one first) with `crashAt` armed (none: no crash). */
  restart(crash?: { at: string; nth?: number }): Promise<CrashServer>;
  /** Starts a second server on the same database (`env` overriding its settings), as a second container would run beside the first; closed with the cluster. */
  startPeer(env?: Record<string, string>): Promise<CrashServer>;
  /** Arms the running server's fault point (none: disarms it) without a restart; false if it is gone. */
  arm(crash?: { at: string; nth?: number }): Promise<boolean>;
  /** Whether the running server's process is still alive. */
  alive(): boolean;
  /** SIGKILLs the running server now. */
  kill(): Promise<void>;
  token(user: string, roles?: string[]): Promise<string>;
  call<T = any>(
    method: string,
    path: string,
    options?: { token?: string; json?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: T }>;
  /** Effects recorded by the tools, per tool call id. */
  effects(conversationId: string): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/** Where the crash server is bundled, inside the repository so its packages resolve from node_modules. */
const BUNDLE_DIR = join("node_modules", ".cache", "threadwise-crash");
let bundled: Promise<string> | undefined;

/**
 * The crash server as one bundled file (esbuild, packages left to node_modules), built once a
 * process: it starts in a fraction of what loading every module through tsx takes, and the
 * tests start it hundreds of times. `import.meta.url` in `lib/` keeps each source file's URL,
 * so paths beside a module (the console, the corpus) resolve as they do unbundled.
 */
function crashServerBundle(): Promise<string> {
  bundled ??= (async () => {
    const outfile = join(BUNDLE_DIR, `crash-server-${process.pid}-${randomUUID().slice(0, 6)}.mjs`);
    await build({
      entryPoints: ["test/support/crash-server.ts"],
      bundle: true,
      platform: "node",
      format: "esm",
      target: `node${process.versions.node.split(".")[0]}`,
      packages: "external",
      outfile,
      logLevel: "warning",
      plugins: [
        {
          name: "source-file-url",
          setup(builder) {
            builder.onLoad({ filter: /\/lib\/.*\.ts$/ }, async (args) => {
              const text = await readFile(args.path, "utf8");
              return { contents: text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)), loader: "ts" };
            });
          },
        },
      ],
    });
    process.once("exit", () => rmSync(outfile, { force: true }));
    return outfile;
  })();
  return bundled;
}

async function startChild(env: Record<string, string>): Promise<CrashServer> {
  const child = spawn(process.execPath, [await crashServerBundle()], { env });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
  // A write to a server that just died is the run's crash, not the harness's.
  child.stdin.on("error", () => undefined);
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  let stdout = "";
  const waiting = new Set<() => void>();
  child.stdout.on("data", (chunk: Buffer) => {
    stdout = (stdout + chunk.toString("utf8")).slice(-4000);
    if (env.CRASH_LOGS) process.stdout.write(chunk);
    for (const check of waiting) check();
  });
  const printed = (line: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!stdout.includes(`${line}\n`)) return;
        waiting.delete(check);
        resolve();
      };
      waiting.add(check);
      check();
      void exited.then(() => reject(new Error(`crash server exited before printing ${line}: ${stderr}`)));
    });
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /listening (http:\/\/\S+)/.exec(stdout);
      if (match) resolve(match[1]);
    };
    waiting.add(check);
    void exited.then(() => reject(new Error(`crash server exited before listening: ${stderr}`)));
  });
  return { url, child, exited, printed };
}

let arming = 0;

/** The local server in a child process on a database of its own, killed and restarted at will; `env` overrides its settings. */
export async function startCrashCluster(env: Record<string, string> = {}): Promise<CrashCluster> {
  const dbName = `crash_${randomUUID().slice(0, 8)}`;
  const keysDir = await mkdtemp(join(tmpdir(), "threadwise-crash-keys-"));
  const keys = await loadOrCreateLocalKeys(keysDir);
  const inspector = new MongoClient(mongoUri());
  await inspector.connect();
  const db = inspector.db(dbName);
  const baseEnv: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    MONGODB_URI: mongoUri(),
    MONGODB_DB: dbName,
    MODEL_PROVIDER: "local",
    AWS_EC2_METADATA_DISABLED: "true",
    KEYS_DIR: keysDir,
    LEASE_TTL_MS: String(CRASH_LEASE_TTL_MS),
    APPROVAL_SWEEP_SECONDS: String(CRASH_SWEEP_SECONDS),
    TURN_RECOVERY_SWEEP_SECONDS: String(CRASH_SWEEP_SECONDS),
    TOOL_TIMEOUT_MS: String(CRASH_TOOL_TIMEOUT_MS),
    // Long enough that an ordinary turn answers in the request; short enough that a slow one goes to the queue.
    SYNC_TURN_DEADLINE_MS: "5000",
    TURN_MAX_RECEIVES: "6",
    ...env,
  };
  const peers: CrashServer[] = [];
  const cluster: CrashCluster = {
    db,
    dbName,
    keys,
    server: await startChild(baseEnv),
    async restart(crash) {
      if (cluster.alive()) await cluster.kill();
      cluster.server = await startChild({ ...baseEnv, ...(crash && { CRASH_AT: crash.at, CRASH_NTH: String(crash.nth ?? 1) }) });
      return cluster.server;
    },
    async startPeer(env = {}) {
      const peer = await startChild({ ...baseEnv, ...env });
      peers.push(peer);
      return peer;
    },
    alive: () => cluster.server.child.exitCode === null && cluster.server.child.signalCode === null,
    async arm(crash) {
      if (!cluster.alive()) return false;
      const tag = `a${++arming}`;
      const seen = cluster.server.printed(`armed ${tag}`);
      cluster.server.child.stdin.write(crash ? `arm ${crash.at} ${crash.nth ?? 1} ${tag}\n` : `disarm ${tag}\n`);
      return seen.then(
        () => true,
        () => false,
      );
    },
    async kill() {
      cluster.server.child.kill("SIGKILL");
      await cluster.server.exited;
    },
    token: (user, roles = []) => mintLocalToken(keys, { user, roles }),
    async call(method, path, { token, json, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { ...headers, ...(token && { authorization: `Bearer ${token}` }) } };
      if (json !== undefined) {
        init.body = JSON.stringify(json);
        (init.headers as Record<string, string>)["content-type"] = "application/json";
      }
      const res = await fetch(`${cluster.server.url}${path}`, init);
      const text = await res.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // An event stream or plain text stays text.
      }
      return { status: res.status, body: body as never };
    },
    async effects(conversationId) {
      const docs = await db.collection(EFFECTS_COLLECTION).find({ conversationId }).toArray();
      const counts = new Map<string, number>();
      for (const d of docs) counts.set(String(d.toolCallId), (counts.get(String(d.toolCallId)) ?? 0) + 1);
      return counts;
    },
    async close() {
      for (const server of new Set([cluster.server, ...peers])) {
        server.child.kill("SIGKILL");
        await server.exited;
      }
      await db
        .collection(EFFECTS_COLLECTION)
        .drop()
        .catch(() => undefined);
      await dropKnownCollections(db);
      await inspector.close();
    },
  };
  return cluster;
}

export { APPROVER_ROLE };
