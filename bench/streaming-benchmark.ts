/**
 * Streaming benchmark: how long after the model's first token the first text reaches the user,
 * on the local server, through SSE, the Slack stand-in (`chat.startStream`) and the Teams
 * stand-in (the first `streaming` typing activity), against the stock approach (the whole answer
 * in one JSON response); and the MongoDB writes streaming adds to a turn, by answer length.
 *
 *   npm run bench:streaming [-- --runs 9] [-- --rate 40] [-- --write (results to bench/results)]
 *
 * The model is the real `ChatBedrockConverse` against the local Converse endpoint, streaming a
 * word per delta at a fixed rate (`--rate` tokens per second); MongoDB is the embedded server.
 * Figures are medians over `--runs` turns; everything runs on this machine.
 */
import { writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { loadConfig } from "../lib/config/config.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { mintLocalToken, loadOrCreateLocalKeys } from "../lib/local/local-keys.js";
import { startLocalServer } from "../lib/local/local-server.js";
import { silentLogger } from "../lib/logger.js";
import { COLLECTIONS } from "../lib/store/collections.js";
import { startBotConnectorEndpoint } from "../test/support/bot-connector-endpoint.js";
import { lastUserText, startConverseEndpoint } from "../test/support/converse-endpoint.js";
import { startSlackApiEndpoint } from "../test/support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../test/support/slack-signing.js";
import { startBotFrameworkIssuer, TEST_APP_ID } from "../test/support/teams-signing.js";
import { appMention, BOT_USER, envelope, TEAM } from "../test/channels/slack/fixtures.js";
import { messageActivity } from "../test/channels/teams/fixtures.js";

/** The target: first visible text within this long of the model's first token, on the local server. */
const TARGET_OVERHEAD_MS = 100;
const BOT_TOKEN = "xoxb-bench-token";
const APP_PASSWORD = "bench-client-secret";
const options = { runs: { type: "string", default: "9" }, rate: { type: "string", default: "40" }, write: { type: "boolean", default: false } } as const;
const { values } = parseCliArgs(optionsUsage("bench:streaming", options), { options });
const runs = Number(values.runs);
const rate = Number(values.rate);

/** "words N": an answer of N words; anything else, 60 words. */
function answerFor(question: string): string {
  const words = Number(/words (\d+)/.exec(question)?.[1] ?? 60);
  return Array.from({ length: words }, (_, i) => `word${i}`).join(" ");
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const mongo = await startEmbeddedMongo();
const converse = await startConverseEndpoint({ respond: (request) => ({ text: answerFor(lastUserText(request)) }), streamTokensPerSecond: rate });
const slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER, streaming: true });
const connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD, streaming: true });
const issuer = await startBotFrameworkIssuer();
for (const [name, value] of Object.entries(converse.environment)) process.env[name] = value;
const localDir = await mkdtemp(join(tmpdir(), "threadwise-bench-"));
const config = loadConfig({
  MONGODB_URI: mongo.uri,
  MONGODB_DB: "bench_streaming",
  MODEL_PROVIDER: "bedrock",
  BEDROCK_MODEL_ID: "bench",
  SLACK_API_URL: slack.slackApiUrl,
  TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
  TEAMS_TOKEN_URL: connector.tokenUrl,
});
const server = await startLocalServer(config, {
  port: 0,
  localDir,
  app: { logger: silentLogger, tools: [] },
  channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN }, teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD } },
});
const token = await mintLocalToken(await loadOrCreateLocalKeys(localDir), { user: "bench" });
const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };

async function conversation(): Promise<string> {
  const res = await fetch(`${server.url}/v1/conversations`, { method: "POST", headers: auth });
  return ((await res.json()) as { conversationId: string }).conversationId;
}

/** The model request of the latest turn, and when its first token went out. */
const lastModelFirstToken = () => converse.requests.filter((r) => r.operation === "converse-stream").at(-1)!.firstTextAt!;

/** SSE: milliseconds from the model's first token to the first `text` event read by the client; and the turn's id. */
async function sseOverhead(question: string): Promise<{ ms: number; turnId: string }> {
  const id = await conversation();
  const res = await fetch(`${server.url}/v1/conversations/${id}/messages`, {
    method: "POST",
    headers: { ...auth, accept: "text/event-stream" },
    body: JSON.stringify({ content: question }),
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let firstText: number | undefined;
  let turnId = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    firstText ??= buffered.includes("event: text") ? performance.now() : undefined;
    turnId ||= /"turnId":"([^"]+)"/.exec(buffered)?.[1] ?? "";
  }
  return { ms: firstText! - lastModelFirstToken(), turnId };
}

/** The stock approach: the whole answer in the JSON response, measured from the model's first token. */
async function jsonOverhead(question: string): Promise<number> {
  const id = await conversation();
  const res = await fetch(`${server.url}/v1/conversations/${id}/messages`, { method: "POST", headers: auth, body: JSON.stringify({ content: question }) });
  await res.json();
  return performance.now() - lastModelFirstToken();
}

let slackTs = 0;
async function slackOverhead(question: string): Promise<number> {
  const ts = `1700009${String(++slackTs).padStart(3, "0")}.000100`;
  const body = envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> ${question}` }));
  await fetch(`${server.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body });
  await server.turnQueue.drain();
  return slack.streams.find((s) => s.threadTs === ts)!.startedAt - lastModelFirstToken();
}

async function teamsOverhead(question: string): Promise<number> {
  const activity = messageActivity(connector.serviceUrl, { text: question });
  const bearer = await issuer.sign({ serviceUrl: connector.serviceUrl });
  await fetch(`${server.url}/teams/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
    body: JSON.stringify(activity),
  });
  await server.turnQueue.drain();
  const first = connector.replies.findIndex(
    (r) => r.activityId === activity.id && (r.activity.entities as { streamType?: string }[] | undefined)?.[0]?.streamType === "streaming",
  );
  return connector.arrivals[first] - lastModelFirstToken();
}

const sse: number[] = [];
const json: number[] = [];
const slackMs: number[] = [];
const teamsMs: number[] = [];
for (let i = 0; i < runs; i++) {
  sse.push((await sseOverhead("words 60")).ms);
  json.push(await jsonOverhead("words 60"));
  slackMs.push(await slackOverhead("words 60"));
  teamsMs.push(await teamsOverhead("words 60"));
}

const batches = server.app.database.db.collection(COLLECTIONS.turnEvents);
const writes: { words: number; batches: number; events: number }[] = [];
for (const words of [10, 100, 1000]) {
  const { turnId } = await sseOverhead(`words ${words}`);
  // The client sees `done` as it is published, a moment before its batch is stored: wait for the batch.
  let docs = await batches.find({ turnId }).toArray();
  for (let i = 0; i < 100 && !docs.some((d) => (d.events as { type: string }[]).some((e) => e.type === "done")); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    docs = await batches.find({ turnId }).toArray();
  }
  writes.push({ words, batches: docs.length, events: docs.reduce((n, d) => n + (d.events as unknown[]).length, 0) });
}

await server.close();
await Promise.all([converse.close(), slack.close(), connector.close(), issuer.close()]);
await mongo.stop();

const f = (ms: number) => `${ms.toFixed(1)} ms`;
const lines = [
  "# Streaming: time to first visible text, and writes per turn",
  "",
  `Generated by \`npm run bench:streaming -- --write\` (${runs} turns per row, the model streaming ${rate} ` +
    `tokens/s, a 60-word answer; Node ${process.version}, ${cpus().length} CPUs, load average ` +
    `${loadavg()[0].toFixed(1)}).`,
  "",
  "From the model's first token (the local Converse endpoint writing it) to the first answer text the user's side receives, median:",
  "",
  "| Channel | First text after the model's first token | Target |",
  "| --- | --- | --- |",
  `| SSE (\`Accept: text/event-stream\`) | ${f(median(sse))} | < ${TARGET_OVERHEAD_MS} ms |`,
  `| Slack stand-in (\`chat.startStream\`) | ${f(median(slackMs))} | |`,
  `| Teams stand-in (first \`streaming\` update; updates are paced at one a second) | ${f(median(teamsMs))} | |`,
  `| Stock: the whole answer in one JSON response | ${f(median(json))} (SSE is ${(median(json) / median(sse)).toFixed(0)}× sooner) | |`,
  "",
  "MongoDB writes streaming adds to a turn (`turn_events` batches, one upsert each), by answer length:",
  "",
  "| Answer | Batches written | Events stored |",
  "| --- | --- | --- |",
  ...writes.map((w) => `| ${w.words} words | ${w.batches} | ${w.events} |`),
  "",
];
console.log(lines.join("\n"));
// Tracked results change only when asked: `npm run bench:streaming -- --write`.
if (values.write) writeFileSync(new URL("./results/streaming.md", import.meta.url), lines.join("\n"));
