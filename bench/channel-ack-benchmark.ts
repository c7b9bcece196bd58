/**
 * Channel acknowledgement benchmark: the time from sending a signed Slack event or Teams activity
 * to the local server's HTTP answer, while the turns it queues run in the same process (local
 * server, embedded MongoDB, offline model; the Slack Web API and Bot Connector stand-ins of the
 * tests take the replies). Slack wants an answer within three seconds; the handler only verifies,
 * parses, dedupes and enqueues. Three runs per channel, each message a new thread:
 *
 * - one at a time, the queue drained between requests;
 * - back to back, every turn queued behind them;
 * - from concurrent senders.
 *
 *   npm run bench:channel-ack [-- --messages 200] [-- --senders 10] [-- --write (results to bench/results)]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { loadConfig } from "../lib/config/config.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { startLocalServer, type LocalServer } from "../lib/local/local-server.js";
import { silentLogger } from "../lib/logger.js";
import { appMention, envelope } from "../test/channels/slack/fixtures.js";
import { messageActivity } from "../test/channels/teams/fixtures.js";
import { startBotConnectorEndpoint } from "../test/support/bot-connector-endpoint.js";
import { startSlackApiEndpoint } from "../test/support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../test/support/slack-signing.js";
import { startBotFrameworkIssuer, TEST_APP_ID } from "../test/support/teams-signing.js";
import { markdownTable } from "./support/markdown.js";
import { writeResults } from "./support/results.js";
import { quantile } from "./support/statistics.js";

const BOT_TOKEN = "xoxb-bench";
const APP_PASSWORD = "bench-password";

/** One signed request, ready to send: building and signing it is not part of the time measured. */
interface SignedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

interface Channel {
  name: "Slack" | "Teams";
  /** The answer that acknowledges a message. */
  status: number;
  next(): Promise<SignedRequest>;
}

async function timedPost(server: LocalServer, request: SignedRequest, expected: number): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}${request.path}`, { method: "POST", headers: request.headers, body: request.body });
  await response.arrayBuffer();
  const ms = performance.now() - started;
  if (response.status !== expected) throw new Error(`${request.path} answered ${response.status}, not ${expected}`);
  return ms;
}

async function oneAtATime(server: LocalServer, channel: Channel, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    times.push(await timedPost(server, await channel.next(), channel.status));
    await server.turnQueue.drain();
  }
  return times;
}

async function backToBack(server: LocalServer, channel: Channel, count: number): Promise<number[]> {
  const requests = await Promise.all(Array.from({ length: count }, () => channel.next()));
  const times: number[] = [];
  for (const request of requests) times.push(await timedPost(server, request, channel.status));
  await server.turnQueue.drain();
  return times;
}

async function concurrent(server: LocalServer, channel: Channel, count: number, senders: number): Promise<number[]> {
  const requests = await Promise.all(Array.from({ length: count }, () => channel.next()));
  const times: number[] = [];
  await Promise.all(
    Array.from({ length: senders }, async () => {
      for (let request = requests.shift(); request; request = requests.shift()) times.push(await timedPost(server, request, channel.status));
    }),
  );
  await server.turnQueue.drain();
  return times;
}

const pair = (times: number[]) => `${quantile(times, 0.5).toFixed(1)} / ${quantile(times, 0.95).toFixed(1)} ms`;

async function main(): Promise<void> {
  const options = {
    messages: { type: "string", default: "200" },
    senders: { type: "string", default: "10" },
    write: { type: "boolean", default: false },
  } as const;
  const { values } = parseCliArgs(optionsUsage("bench:channel-ack", options), { options });
  const messages = Number(values.messages);
  const senders = Number(values.senders);
  const mongo = await startEmbeddedMongo();
  const slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN });
  const issuer = await startBotFrameworkIssuer();
  const connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD });
  const localDir = await mkdtemp(join(tmpdir(), "threadwise-bench-keys-"));
  const config = loadConfig({
    MONGODB_URI: mongo.uri,
    MONGODB_DB: "bench_channel_ack",
    SLACK_API_URL: slackApi.slackApiUrl,
    TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
    TEAMS_TOKEN_URL: connector.tokenUrl,
  });
  const server = await startLocalServer(config, {
    port: 0,
    localDir,
    app: { logger: silentLogger },
    channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN }, teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD } },
  });
  let thread = 0;
  const slack: Channel = {
    name: "Slack",
    status: 200,
    async next() {
      thread += 1;
      const ts = `1700${String(thread).padStart(6, "0")}.000100`;
      const body = envelope(appMention({ ts, event_ts: ts }));
      return { path: "/slack/events", headers: signSlackRequest(body), body };
    },
  };
  const teams: Channel = {
    name: "Teams",
    status: 202,
    async next() {
      thread += 1;
      const activity = messageActivity(connector.serviceUrl, {
        id: `bench-${thread}`,
        conversation: { conversationType: "personal", id: `a:bench-${thread}` },
      });
      const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
      return { path: "/teams/messages", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(activity) };
    },
  };
  const runs = [
    { label: "one at a time, queue drained between requests", run: (c: Channel) => oneAtATime(server, c, Math.min(50, messages)) },
    { label: `${messages} back to back, every turn queued behind them`, run: (c: Channel) => backToBack(server, c, messages) },
    { label: `${messages} from ${senders} concurrent senders`, run: (c: Channel) => concurrent(server, c, messages, senders) },
  ];
  const rows: string[][] = [];
  try {
    // A warm-up message per channel: the first request pays for compiling and the first connections.
    for (const channel of [slack, teams]) await oneAtATime(server, channel, 3);
    for (const { label, run } of runs) {
      const cells = [label];
      for (const channel of [slack, teams]) cells.push(pair(await run(channel)));
      rows.push(cells);
      console.error(`${label}: done`);
    }
  } finally {
    await server.close();
    await Promise.all([slackApi.close(), connector.close(), issuer.close()]);
    await mongo.stop();
    await rm(localDir, { recursive: true, force: true });
  }
  const table = markdownTable(["run", "Slack ack p50 / p95", "Teams ack p50 / p95"], rows);
  const replies = `${slackApi.posts.length} Slack posts and ${connector.replies.length} Teams replies sent by the worker.`;
  console.log(`${table}\n\n${replies}`);
  if (values.write) {
    const heading =
      `Generated by \`npm run bench:channel-ack -- --write\` (Node ${process.version}, ${cpus().length} CPUs, load ` +
      `average ${loadavg()[0].toFixed(1)} when it finished).`;
    await writeResults({ "channel-ack.md": `# Slack and Teams acknowledgement\n\n${heading}\n\n${table}\n\n${replies}\n` });
  }
}

await main();
