/**
 * The local server as a child process a test can SIGKILL (test/local/crash-recovery.test.ts).
 * Configured by its environment (MONGODB_URI, MONGODB_DB, LEASE_TTL_MS, APPROVAL_SWEEP_SECONDS,
 * TOOL_TIMEOUT_MS, …, and KEYS_DIR for the signing keys), with two side-effect tools that record
 * every run in `crash_effects`: `record_effect` runs at once, `approved_effect` waits for a
 * manager's approval. `CRASH_AT` names a fault point (or `inside-tool`: after a tool's effect,
 * before it returns) and `CRASH_NTH` which passage through it kills the process (default 1);
 * `arm <point> <nth> <tag>` / `disarm <tag>` lines on stdin change them while it runs.
 * Prints `listening <url>` once it serves; `CRASH_LOGS=1` also prints its log lines and how long it took to load and start.
 */
import { createInterface } from "node:readline";
import { MongoClient } from "mongodb";
import { z } from "zod";
import type { FaultInjector } from "../../lib/agent/fault-points.js";
import { loadConfig } from "../../lib/config/config.js";
import { startLocalServer } from "../../lib/local/local-server.js";
import { jsonConsoleLogger, silentLogger } from "../../lib/logger.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { APPROVER_ROLE, EFFECTS_COLLECTION } from "./crash-server.constants.js";

let crashAt = process.env.CRASH_AT;
let nth = Number(process.env.CRASH_NTH ?? "1");
let passages = 0;

// `arm <point> <nth> <tag>` or `disarm <tag>` on stdin re-arms a running server (answered `armed <tag>`),
// so a run of the crash test needs no start of its own to choose its fault point.
createInterface({ input: process.stdin }).on("line", (line) => {
  const [verb, ...args] = line.trim().split(/\s+/);
  if (verb === "arm") {
    crashAt = args[0];
    nth = Number(args[1] ?? "1");
  } else if (verb === "disarm") crashAt = undefined;
  else return;
  passages = 0;
  console.log(`armed ${args[args.length - 1]}`);
});

/** Dies here, as a killed process does: nothing after this line runs, no finally, no write. */
function maybeDie(point: string): void {
  if (point !== crashAt) return;
  passages += 1;
  if (passages === nth) process.kill(process.pid, "SIGKILL");
}

const loadedAt = process.uptime();
const faults: FaultInjector = { at: (point) => maybeDie(point) };
const config = loadConfig(process.env);
const inspector = new MongoClient(config.mongodbUri ?? "");
const effects = inspector.db(config.dbName).collection(EFFECTS_COLLECTION);

function effectTool(name: string): ToolDefinition {
  return {
    name,
    description: "Records an effect.",
    schema: z.object({ note: z.string() }),
    sideEffects: true,
    run: async ({ note }: { note: string }, ctx) => {
      await effects.insertOne({ conversationId: ctx.conversationId, toolCallId: ctx.toolCallId, tool: name, note, at: new Date() });
      maybeDie("inside-tool");
      return `recorded ${note}`;
    },
  };
}

config.tools.approvals.tools = { approved_effect: { require: "always", approvers: { roles: [APPROVER_ROLE] } } } as typeof config.tools.approvals.tools;
await inspector.connect();
const server = await startLocalServer(config, {
  port: 0,
  localDir: process.env.KEYS_DIR,
  app: { faults, tools: [effectTool("record_effect"), effectTool("approved_effect")], logger: process.env.CRASH_LOGS ? jsonConsoleLogger : silentLogger },
});
if (process.env.CRASH_LOGS) console.log(JSON.stringify({ loadedS: loadedAt, startedS: process.uptime() }));
console.log(`listening ${server.url}`);
process.on("SIGTERM", () => {
  void server.close().then(() => inspector.close().then(() => process.exit(0)));
});
