/**
 * The local server's CPU while no turn runs (its turn queue's poll every 250 ms, the recovery
 * sweep's timer, the driver's monitoring), per second of wall time: what a turn's CPU includes in
 * proportion to its wall time, whatever it does (bench:long's CPU per turn, docs/storage.md).
 *
 *   npx tsx bench/local-idle-cpu.ts [--seconds 10]
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../lib/config/config.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { startLocalServer } from "../lib/local/local-server.js";
import { silentLogger } from "../lib/logger.js";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "10" } } });
const seconds = Number(values.seconds);
const mongo = await startEmbeddedMongo();
const localDir = await mkdtemp(join(tmpdir(), "threadwise-idle-"));
const config = loadConfig({ MONGODB_URI: mongo.uri, MONGODB_DB: "local_idle_cpu" });
const server = await startLocalServer(config, { port: 0, localDir, monitorCommands: true, app: { logger: silentLogger } });
let commands = 0;
server.app.database.db.client.on("commandStarted", () => commands++);
// Past start-up's own work (set-up, the first sweep).
await new Promise((resolve) => setTimeout(resolve, 3_000));
commands = 0;
const started = process.cpuUsage();
await new Promise((resolve) => setTimeout(resolve, seconds * 1_000));
const used = process.cpuUsage(started);
const cpuMs = (used.user + used.system) / 1_000;
process.stdout.write(
  `idle local server: ${(cpuMs / seconds).toFixed(1)} ms of CPU and ${(commands / seconds).toFixed(1)} database commands per second, over ${seconds} s\n`,
);
await server.close();
await mongo.stop();
