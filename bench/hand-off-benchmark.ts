/**
 * Hand-off benchmark: model calls per answered turn, and what the client waits, for answers that
 * take 5, 25 and 45 s against the API's 20 s hand-off deadline (`SYNC_TURN_DEADLINE_MS`), through
 * the HTTP API of the local server (the API's in-request attempt, then the worker).
 *
 *   npm run bench:hand-off [-- --scale 0.1] [-- --runs 3] [-- --max-sync-ms 2800]
 *
 * Times are scaled by `--scale` (default 0.1: answers of 0.5, 2.5 and 4.5 s against a 2 s deadline),
 * so the run takes seconds, not minutes; the ratios are those of the full-size case. The model is the
 * real `ChatBedrockConverse` against the local Converse endpoint, streaming a word per delta at
 * 40 words per second, so an answer's length sets its duration. `--max-sync-ms` sets
 * `SYNC_TURN_MAX_MS` (the stack's 28 s, scaled: 2,800 ms), the hard limit under API Gateway.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { loadConfig } from "../lib/config/config.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { mintLocalToken, loadOrCreateLocalKeys } from "../lib/local/local-keys.js";
import { startLocalServer } from "../lib/local/local-server.js";
import { silentLogger } from "../lib/logger.js";
import { lastUserText, startConverseEndpoint } from "../test/support/converse-endpoint.js";

const WORDS_PER_SECOND = 40;
const ANSWER_SECONDS = [5, 25, 45];
const DEADLINE_MS = 20_000;
const options = { scale: { type: "string", default: "0.1" }, runs: { type: "string", default: "3" }, "max-sync-ms": { type: "string" } } as const;
const { values } = parseCliArgs(optionsUsage("bench:hand-off", options), { options });
const scale = Number(values.scale);
const runs = Number(values.runs);

/** "answer N words …": an answer of N words. */
function answerFor(question: string): string {
  const words = Number(/answer (\d+) words/.exec(question)?.[1] ?? 10);
  return Array.from({ length: words }, (_, i) => `word${i}`).join(" ");
}

const mongo = await startEmbeddedMongo();
const converse = await startConverseEndpoint({ respond: (request) => ({ text: answerFor(lastUserText(request)) }), streamTokensPerSecond: WORDS_PER_SECOND });
for (const [name, value] of Object.entries(converse.environment)) process.env[name] = value;
const localDir = await mkdtemp(join(tmpdir(), "threadwise-bench-"));
const config = loadConfig({
  MONGODB_URI: mongo.uri,
  MONGODB_DB: "bench_hand_off",
  MODEL_PROVIDER: "bedrock",
  BEDROCK_MODEL_ID: "bench",
  SYNC_TURN_DEADLINE_MS: String(Math.round(DEADLINE_MS * scale)),
  ...(values["max-sync-ms"] && { SYNC_TURN_MAX_MS: values["max-sync-ms"] }),
});
const server = await startLocalServer(config, { port: 0, localDir, app: { logger: silentLogger, tools: [] } });
const token = await mintLocalToken(await loadOrCreateLocalKeys(localDir), { user: "bench" });
const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };

/** One turn through the API: its status code, model calls, and the client's wait until it has the answer (polling a 202's turn). */
async function turn(question: string): Promise<{ status: number; calls: number; waitMs: number; answered: boolean }> {
  const started = performance.now();
  const created = await fetch(`${server.url}/v1/conversations`, { method: "POST", headers: auth });
  const { conversationId } = (await created.json()) as { conversationId: string };
  const res = await fetch(`${server.url}/v1/conversations/${conversationId}/messages`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ content: question }),
  });
  const body = (await res.json()) as { status?: string; location?: string };
  let status = body.status;
  while (res.status === 202 && status !== "completed" && status !== "failed") {
    await new Promise((resolve) => setTimeout(resolve, 50));
    status = ((await (await fetch(`${server.url}${body.location}`, { headers: auth })).json()) as { status: string }).status;
  }
  const calls = converse.requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes(question)).length;
  return { status: res.status, calls, waitMs: performance.now() - started, answered: status === "completed" };
}

const cap = values["max-sync-ms"] ? `SYNC_TURN_MAX_MS ${values["max-sync-ms"]} ms` : "no hard limit";
console.log(`hand-off deadline ${Math.round(DEADLINE_MS * scale)} ms (20 s × ${scale}), ${cap}`);
console.log("| answer (full size) | answer (run) | runs | HTTP status | model calls per answered turn | client's wait (median) |");
console.log("|---|---|---|---|---|---|");
for (const seconds of ANSWER_SECONDS) {
  const words = Math.round(seconds * scale * WORDS_PER_SECOND);
  const results = [];
  for (let i = 0; i < runs; i++) results.push(await turn(`answer ${words} words, run ${seconds}-${i}`));
  const answered = results.filter((r) => r.answered);
  const perTurn = answered.reduce((n, r) => n + r.calls, 0) / Math.max(1, answered.length);
  const waits = results.map((r) => r.waitMs).sort((a, b) => a - b);
  const statuses = [...new Set(results.map((r) => r.status))].join(", ");
  const median = Math.round(waits[Math.floor(waits.length / 2)]);
  console.log(
    `| ${seconds} s | ${(seconds * scale).toFixed(1)} s | ${runs} (${answered.length} answered) | ${statuses} | ${perTurn.toFixed(2)} | ${median} ms |`,
  );
}
await server.close();
await converse.close();
await mongo.stop();
