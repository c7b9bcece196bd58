/**
 * Linear-time benchmark: the worst case found, per 16,000 characters (the longest user message),
 * for the token counter and every parser of user text, over the adversarial shapes of the
 * linear-time tests (a run of every whitespace class, combining mark, emoji sequence, symbol and
 * markup fragment; deep nesting; seeded random mixtures), and the stock js-tiktoken encoder on
 * runs of ideographic spaces, its worst case, at sizes it finishes.
 *
 *   npm run bench:linear [-- --seed 7] [-- --random 200] [-- --write (results to bench/results)]
 *
 * Each figure is the median of 5 runs of one input, in CPU time of this process: how long that
 * input holds the event loop, without the time other processes of a shared machine take from it.
 */
import { cpus, loadavg } from "node:os";
import { z } from "zod";
import { HumanMessage } from "@langchain/core/messages";
import fc from "fast-check";
import { encodingForModel } from "js-tiktoken";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { LocalChatModel, type FunctionTool } from "../lib/agent/local-chat-model.js";
import { parseJsonBody, prefersAsync } from "../lib/api/request-parsing.js";
import { parseSlackEvent } from "../lib/channels/slack/slack-event.js";
import { parseTeamsActivity } from "../lib/channels/teams/teams-activity.js";
import { countTextTokens } from "../lib/model-view/token-counter.js";
import { checkReadOnlySql } from "../lib/tools/sql/read-only-sql.js";
import { ADVERSARIAL_CHARS, adversarialShape, runShapes, type AdversarialShape } from "../test/support/adversarial-text.js";
import { appMention, BOT_USER, envelope } from "../test/channels/slack/fixtures.js";
import { channelMention } from "../test/channels/teams/fixtures.js";
import { quantile } from "./support/statistics.js";
import { writeResults } from "./support/results.js";

const RUNS = 5;
/** The target of issue 14: no input holds the event loop longer, per 16,000 characters. */
const TARGET_MS = 50;

const options = { seed: { type: "string", default: "7" }, random: { type: "string", default: "200" }, write: { type: "boolean", default: false } } as const;
const { values } = parseCliArgs(optionsUsage("bench:linear", options), { options });
const seed = Number(values.seed);
const randomShapes = Number(values.random);

const sqlTool: FunctionTool = {
  type: "function",
  function: { name: "sql_query", description: "", parameters: { type: "object", properties: { sql: { type: "string" } }, required: ["sql"] } },
};
const localModel = new LocalChatModel().bindTools([sqlTool]) as unknown as { respond(messages: unknown[]): unknown };
const bodySchema = z.strictObject({ content: z.string() });
const ignoreValidation = (run: () => unknown) => {
  try {
    run();
  } catch {
    // A refusal is an answer too; its cost is what is measured.
  }
};

/** The parsers of user text, each given an adversarial text the way it meets one. */
const subjects: { name: string; run: (text: string) => unknown }[] = [
  { name: "token counter (countTextTokens)", run: countTextTokens },
  { name: "Slack event (parseSlackEvent, mention stripped)", run: (text) => parseSlackEvent(envelope(appMention({ text: `<@${BOT_USER}> ${text}` }))) },
  {
    name: "Teams activity (parseTeamsActivity, mention stripped)",
    run: (text) => parseTeamsActivity(channelMention("https://smba.example/", { text: `<at>Threadwise</at> ${text}` })),
  },
  {
    name: "API body (parseJsonBody)",
    run: (text) =>
      ignoreValidation(() => parseJsonBody({ method: "POST", path: "/", headers: {}, query: {}, body: JSON.stringify({ content: text }) }, bodySchema)),
  },
  { name: "Prefer header (prefersAsync)", run: (text) => prefersAsync({ method: "POST", path: "/", headers: { prefer: text }, query: {} }) },
  { name: "read-only SQL check (checkReadOnlySql)", run: (text) => checkReadOnlySql(`SELECT ${text}`, "sqlite") },
  { name: "offline model (tool call in the question)", run: (text) => localModel.respond([new HumanMessage(`sql_query ${text}`)]) },
];

function cpuMs(run: () => unknown): number {
  const started = process.cpuUsage();
  run();
  const { user, system } = process.cpuUsage(started);
  return (user + system) / 1000;
}

function medianMs(run: () => unknown): number {
  return quantile(
    Array.from({ length: RUNS }, () => cpuMs(run)),
    0.5,
  );
}

const shapes: AdversarialShape[] = [...runShapes(), ...fc.sample(adversarialShape(), { seed, numRuns: randomShapes })];
countTextTokens("warm up the encoding table");

const rows: string[] = [];
for (const subject of subjects) {
  let worst = { shape: shapes[0], ms: 0 };
  for (const shape of shapes) {
    const text = shape.text(ADVERSARIAL_CHARS);
    const ms = medianMs(() => subject.run(text));
    if (ms > worst.ms) worst = { shape, ms };
  }
  rows.push(`| ${subject.name} | ${worst.ms.toFixed(1)} ms | ${worst.shape.name.replace(/\|/g, "\\|")} |`);
  console.log(`${subject.name}: worst ${worst.ms.toFixed(1)} ms (${worst.shape.name})`);
}

// The stock encoder on runs of ideographic spaces (its worst case: one piece, rescanned per merge), at sizes it finishes.
const stock = encodingForModel("gpt-4");
const stockRows: string[] = [];
for (const chars of [500, 1_000, 2_000]) {
  const text = "\u3000".repeat(chars);
  const stockMs = cpuMs(() => stock.encode(text, [], []));
  const oursMs = medianMs(() => countTextTokens(text));
  stockRows.push(
    `| ${chars.toLocaleString("en-US")} | ${stockMs.toFixed(0)} ms | ${oursMs.toFixed(2)} ms | ${Math.round(stockMs / oursMs).toLocaleString("en-US")}× |`,
  );
  console.log(`stock js-tiktoken on ${chars} ideographic spaces: ${stockMs.toFixed(0)} ms; ours ${oursMs.toFixed(2)} ms`);
}
const ideographic = "\u3000".repeat(8_000);
const ideographicMs = medianMs(() => countTextTokens(ideographic));

const worstAll = Math.max(...rows.map((r) => Number(/\| ([\d.]+) ms/.exec(r)![1])));
const report = [
  "# Linear-time benchmark",
  "",
  `Generated by \`npm run bench:linear -- --write\` (seed ${seed}, ${shapes.length} shapes: ` +
    `${shapes.length - randomShapes} runs and nestings, ${randomShapes} random; Node ${process.version}, ` +
    `${cpus().length} CPUs, load average ${loadavg()[0].toFixed(1)} when it finished).`,
  `Each figure is the median of ${RUNS} runs of one input of ${ADVERSARIAL_CHARS.toLocaleString("en-US")} ` +
    `characters, in CPU time of the process: how long that input holds the event loop (other processes on this ` +
    `shared machine do not count). Target: under ${TARGET_MS} ms.`,
  "",
  "| parser | worst case per 16,000 characters | worst shape |",
  "|---|---:|---|",
  ...rows,
  "",
  `Worst of all: ${worstAll.toFixed(1)} ms (${worstAll < TARGET_MS ? "under" : "over"} the ${TARGET_MS} ms target).`,
  "",
  'The stock js-tiktoken encoder (`encodingForModel("gpt-4")`, whose counts the token counter reproduces) on runs of U+3000 ideographic spaces:',
  "",
  "| characters | stock | token counter | stock ÷ token counter |",
  "|---:|---:|---:|---:|",
  ...stockRows,
  "",
  `8,000 U+3000 ideographic spaces (66 s with the stock encoder when issue 14 was filed): ${ideographicMs.toFixed(1)} ms.`,
  "",
];
console.log(report.join("\n"));
// Tracked results change only when asked: `npm run bench:linear -- --write`.
if (values.write) await writeResults({ "linear-time.md": report.join("\n") });
