/**
 * Limits benchmark: what the budgets and rate limits add to a turn, on the path users drive (the
 * HTTP API over `createApp`, the offline model, the embedded MongoDB), and a scripted user
 * stopped at its budget.
 *
 *   npm run bench:limits [-- --runs 101] [-- --turns 1000] [-- --write (results to bench/results)]
 *
 * Round trips are counted with the driver's command monitoring: the commands the limits send
 * from the request's start until the turn's first model call (the admission, and the first
 * call's reservation, which the admission made), and a container's first turn, which also reads
 * the limits set in the database (then cached). Times are the limits' own calls, median and p95.
 */
import { randomUUID } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { MongoClient } from "mongodb";
import { createHttpHandler } from "../lib/api/http-handler.js";
import type { HttpRequest } from "../lib/api/http.js";
import { createApp } from "../lib/app.js";
import { apiPrincipal } from "../lib/auth/principal.js";
import { loadConfig } from "../lib/config/config.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { COLLECTIONS } from "../lib/store/collections.js";
import { markdownTable } from "./support/markdown.js";
import { writeResults } from "./support/results.js";

const options = { runs: { type: "string", default: "101" }, turns: { type: "string", default: "1000" }, write: { type: "boolean", default: false } } as const;
const { values } = parseCliArgs(optionsUsage("bench:limits", options), { options });
const runs = Number(values.runs);
const scriptedTurns = Number(values.turns);

const LIMIT_COLLECTIONS = new Set<string>([COLLECTIONS.limitCounters, COLLECTIONS.limitOverrides, COLLECTIONS.usageDaily]);
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

const mongo = await startEmbeddedMongo();
const client = new MongoClient(mongo.uri, { monitorCommands: true });
await client.connect();
let counting = false;
let commands = 0;
client.on("commandStarted", (event) => {
  const collection = event.command[event.commandName];
  if (counting && typeof collection === "string" && LIMIT_COLLECTIONS.has(collection)) commands++;
});

/** Every limit set for users and tenants, so every condition is in each claim. */
const env = {
  MONGODB_URI: mongo.uri,
  MONGODB_DB: `bench_limits_${randomUUID().slice(0, 8)}`,
  MODEL_MAX_TOKENS: "256",
  VIEW_TOTAL_BUDGET: "2000",
  LIMIT_USER_TURNS_PER_MINUTE: "100000",
  LIMIT_USER_CONCURRENT_TURNS: "100",
  LIMIT_USER_CONCURRENT_STREAMS: "100",
  LIMIT_USER_TOKENS_PER_DAY: "1000000000",
  LIMIT_USER_USD_PER_MONTH: "100000",
  LIMIT_TENANT_TURNS_PER_MINUTE: "100000",
  LIMIT_TENANT_CONCURRENT_TURNS: "1000",
  LIMIT_TENANT_CONCURRENT_STREAMS: "1000",
  LIMIT_TENANT_TOKENS_PER_DAY: "1000000000",
  LIMIT_TENANT_USD_PER_MONTH: "1000000",
};
const config = loadConfig(env);
const app = await createApp(config, { mongoClient: client, tools: [] });
const route = createHttpHandler(app, config, { authenticate: async (r) => ({ principal: apiPrincipal(r.headers["x-user"] ?? "x", "acme"), roles: [] }) });
const request = (method: string, path: string, user: string, body: unknown): HttpRequest => ({
  method,
  path,
  query: {},
  headers: { "x-user": user, "content-type": "application/json" },
  body: JSON.stringify(body),
});

// The limits' calls before the first model call: the admission, and call 0's reservation (taken from the admission).
const timings = { admit: [] as number[], reserve0: [] as number[], before: [] as number[], settle: [] as number[] };
const admission = app.admission;
const run = admission.run.bind(admission);
const reserve = admission.reserveCall.bind(admission);
let beforeFirstCall = 0;
let turnCommands = 0;
// The admission is what `run` does before it runs its body.
admission.run = ((turn, body, options) => {
  const start = performance.now();
  counting = true;
  const admitted: typeof body = (hold) => {
    counting = false;
    beforeFirstCall = performance.now() - start;
    timings.admit.push(beforeFirstCall);
    return body(hold);
  };
  return run(turn, admitted, options);
}) as typeof admission.run;
admission.reserveCall = async (call) => {
  const start = performance.now();
  if (call.call === 0) counting = true;
  try {
    const held = await reserve(call);
    return {
      release: held.release,
      settle: async (usage) => {
        const s = performance.now();
        await held.settle(usage);
        timings.settle.push(performance.now() - s);
      },
    };
  } finally {
    if (call.call === 0) {
      counting = false;
      const took = performance.now() - start;
      timings.reserve0.push(took);
      timings.before.push(beforeFirstCall + took);
      turnCommands = commands;
    }
  }
};

async function ask(user: string, content: string) {
  const created = await route(request("POST", "/v1/conversations", user, {}));
  const { conversationId } = JSON.parse(created.body);
  commands = 0;
  const response = await route(request("POST", `/v1/conversations/${conversationId}/messages`, user, { content }));
  return { status: response.status, commands: turnCommands };
}

// The first turn of the container reads the limits set in the database; the rest find them cached.
const cold = await ask("bench-user", "hello");
const warmCommands: number[] = [];
for (let i = 0; i < runs; i++) warmCommands.push((await ask("bench-user", `question ${i}`)).commands);
for (const key of Object.keys(timings) as (keyof typeof timings)[]) timings[key].splice(0, 1);

// A scripted user with a budget of about `scriptedTurns` turns, one turn after another.
const TURN_TOKENS = 150;
const budget = scriptedTurns * TURN_TOKENS;
await app.limits.overrides.set({ kind: "user", issuer: "api", tenant: "acme", subject: "script" }, { tokensPerDay: budget }, "bench");
let stoppedAt = -1;
const scriptStart = performance.now();
for (let i = 0; i < scriptedTurns * 3; i++) {
  const { status } = await ask("script", `ask ${i}`);
  if (status === 429) {
    stoppedAt = i;
    break;
  }
}
const scriptSeconds = (performance.now() - scriptStart) / 1000;
const used = (
  await app.database.db
    .collection(COLLECTIONS.usageDaily)
    .find({ scopeId: { $regex: '"script"' } })
    .toArray()
).reduce((n, d) => n + d.weightedTokens, 0);

const ms = (x: number) => `${x.toFixed(2)} ms`;
const table = markdownTable(
  ["figure", "value"],
  [
    ["limit commands before the first model call, a container's first turn", String(cold.commands)],
    ["limit commands before the first model call, median of later turns", String(quantile(warmCommands, 0.5))],
    ["limit commands before the first model call, most of later turns", String(Math.max(...warmCommands))],
    ["time the limits add before the first model call, median", ms(quantile(timings.before, 0.5))],
    ["time the limits add before the first model call, p95", ms(quantile(timings.before, 0.95))],
    ["settling one call (after it returns), median", ms(quantile(timings.settle, 0.5))],
    [`scripted user: turns before the budget stopped it (budget ${budget} tokens)`, String(stoppedAt)],
    ["scripted user: tokens used / budget", `${used} / ${budget} (${((100 * (used - budget)) / budget).toFixed(2)} % over)`],
    ["scripted user: seconds", scriptSeconds.toFixed(1)],
  ],
);
const report = [
  "# Limits benchmark",
  "",
  `\`npm run bench:limits -- --runs ${runs} --turns ${scriptedTurns}\`: the HTTP API over \`createApp\`, the offline model, the embedded MongoDB;`,
  `every limit set for the user and its tenant. ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}.`,
  "",
  table,
  "",
].join("\n");
console.log(report);
if (values.write) await writeResults({ "limits.md": report });
await app.close();
await client.close();
await mongo.stop();
