/**
 * Recall benchmark: a generated 200-turn conversation with 40 facts planted at random turns, then one
 * question per fact that asks for it in other words (`bench/recall-facts.ts`: no content word in common).
 * Each question is answered three ways from the same thread:
 *
 * - the shaped view alone (`buildModelView`, default policy): the fact reaches the model only if its
 *   turn is among the last `VIEW_FINISHED_TURNS`;
 * - full replay (every stored message, tool outputs inline): every fact reaches the model;
 * - the shaped view with search: the model calls `search_conversation` with the question; the fact
 *   reaches it if its turn is in view or among the top 3 results. Ranked lexically (BM25, as offline),
 *   and again with embeddings from the local Titan V2 stand-in (`test/support/embeddings-endpoint.ts`,
 *   GloVe word vectors with SIF weights; weaker than Titan, so a floor, not Titan's figure). The search's
 *   time is measured apart from the query's embedding call, which in AWS is Titan's own latency.
 *
 * The turns go through the real stores on the embedded MongoDB server: the application record is
 * written as a turn writes it, and the `TurnIndexer` indexes each turn as the app's hook does.
 *
 * With `--embeddings bedrock` the semantic way calls Titan V2 on Bedrock itself (the AWS SDK's usual
 * credentials and region, `bedrock:InvokeModel` on the model) instead of the stand-in: the figure the
 * issue's target is about, which this repository's machines cannot reach.
 *
 * The turns are written twice, into a database with contents encrypted (local key files: the
 * stored text sealed, the index's terms keyed hashes) and into one in clear, and every figure is
 * measured on each: the report is the encrypted one's, then both side by side.
 *
 *   npm run bench:recall [-- --seed 7] [-- --embeddings stand-in|bedrock] [-- --encryption on,off] [-- --write]   (--write updates bench/results/recall.md)
 */
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { cpus, loadavg, tmpdir } from "node:os";
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MongoClient } from "mongodb";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { DEFAULT_SYSTEM_PROMPT } from "../lib/agent/system-prompt.js";
import { DEFAULT_VIEW_FINISHED_TURNS, DEFAULT_VIEW_TOOL_OUTPUT_TOKENS, DEFAULT_VIEW_TOTAL_BUDGET } from "../lib/config/view-config.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { buildModelView, countMessagesTokens, countMessageTokens, type ModelViewPolicy } from "../lib/model-view/index.js";
import { prng } from "../lib/prng.js";
import { bm25, ConversationSearch } from "../lib/recall/conversation-search.js";
import { BedrockEmbedder, type Embedder } from "../lib/recall/embedder.js";
import { DEFAULT_RECALL_MAX_TOKENS, DEFAULT_RECALL_RESULTS, formatSearchOutcome, SEARCH_CONVERSATION_NAME } from "../lib/recall/search-conversation-tool.js";
import { recallTerms } from "../lib/recall/recall-terms.js";
import { TurnIndexer } from "../lib/recall/turn-indexer.js";
import { ThreadwiseDatabase } from "../lib/store/database.js";
import { LocalTenantKeys } from "../lib/crypto/local-tenant-keys.js";
import { ZERO_USAGE } from "../lib/store/turn-record.js";
import { apiPrincipal } from "../lib/auth/principal.js";
import type { ModelViewStats } from "../lib/model-view/types.js";
import { startEmbeddingsEndpoint, TITAN_V2_MODEL_ID } from "../test/support/embeddings-endpoint.js";
import { ACKNOWLEDGEMENTS, FACTS } from "./recall-facts.js";
import { quantile } from "./support/statistics.js";
import { writeResults } from "./support/results.js";

const TURNS = 200;
const TARGET_RECALL = 0.95;
const TARGET_RESULT_TOKENS = 1_500;
const TARGET_SEARCH_MS = 20;
/** Each question is searched this many times for the timing figures. */
const TIMING_REPEATS = 5;

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];
const int = (random: Random, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));

const REGIONS = ["north", "south", "east", "west", "central"];
const METRICS = ["revenue", "gross margin", "order count", "average discount", "units shipped", "late deliveries"];
const MONTHS = ["May", "June", "July", "August", "September", "October"];
const TOPICS = ["the travel policy", "the expense rules", "the onboarding checklist", "the security guidelines", "the pricing playbook"];
const PEOPLE = ["Daniel", "Aisha", "Tom", "Mei", "Carlos", "Nina"];

interface Turn {
  question: string;
  answer: string;
  tool?: { name: string; args: Record<string, unknown>; output: string };
}

/** Work chatter: data questions answered with a SQL tool, policy questions answered from documents, small requests. */
function fillerTurn(random: Random): Turn {
  const region = pick(random, REGIONS);
  const metric = pick(random, METRICS);
  const month = pick(random, MONTHS);
  switch (int(random, 0, 3)) {
    case 0: {
      const rows = Array.from({ length: int(random, 5, 60) }, (_, i) => `| ${region}-${i + 1} | ${month} | ${int(random, 100, 99_000)} |`);
      return {
        question: `What was the ${metric} for the ${region} region in ${month}?`,
        answer:
          `The ${region} region's ${metric} in ${month} was ${int(random, 100, 99_000).toLocaleString("en-US")}, ` +
          `${pick(random, ["up", "down"])} ${int(random, 1, 19)}% on the month before.`,
        tool: {
          name: "sql_query",
          args: { sql: `SELECT account, month, ${metric.replace(/ /g, "_")} FROM sales WHERE region = '${region}' AND month = '${month}'` },
          output: ["| account | month | value |", ...rows].join("\n"),
        },
      };
    }
    case 1: {
      const topic = pick(random, TOPICS);
      return {
        question: `What does ${topic} say about ${pick(random, ["approvals", "limits", "exceptions", "deadlines"])}?`,
        answer: `According to ${topic}, requests above the limit go to a director, and exceptions are logged in the tracker.`,
        tool: {
          name: "search_documents",
          args: { query: topic },
          output: `${topic}: section ${int(random, 1, 9)}. Requests above the limit need a director's sign-off; exceptions are logged.`,
        },
      };
    }
    case 2:
      return {
        question: `Can you draft a short message to ${pick(random, PEOPLE)} about the ${metric} numbers for ${month}?`,
        answer:
          `Here is a draft: "Hi, the ${month} ${metric} figures are in the shared folder; the ${region} region stands ` +
          `out. Let me know if you need more detail."`,
      };
    default:
      return {
        question: `Compare ${metric} between ${region} and ${pick(random, REGIONS)} for ${month}.`,
        answer:
          `${region} was ${int(random, 2, 30)}% ${pick(random, ["higher", "lower"])} than the other region on ` +
          `${metric} in ${month}, mostly because of ` +
          `${pick(random, ["two large accounts", "pricing", "a late shipment", "returns"])}.`,
      };
  }
}

/** The thread as checkpointed messages, for the view and full replay. */
function threadMessages(turns: readonly Turn[]): BaseMessage[] {
  return turns.flatMap((turn, i) => {
    const messages: BaseMessage[] = [new HumanMessage({ content: turn.question, id: `t${i}:user` })];
    if (turn.tool) {
      const id = `call-${i}`;
      messages.push(new AIMessage({ content: "", tool_calls: [{ id, name: turn.tool.name, args: turn.tool.args, type: "tool_call" }] }));
      messages.push(new ToolMessage({ content: turn.tool.output, tool_call_id: id, name: turn.tool.name }));
    }
    messages.push(new AIMessage(turn.answer));
    return messages;
  });
}

const median = (values: number[]) => quantile(values, 0.5);

/** The control question: the fact's own words, taken mechanically (its first two words of five letters or more). */
function keywordQuestion(statement: string): string {
  const words = statement.match(/[A-Za-z]{5,}/g) ?? [];
  return `What did I say about ${words.slice(0, 2).join(" ").toLowerCase()}?`;
}
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const pct = (n: number) => `${(n * 100).toFixed(1)} %`;

interface Way {
  name: string;
  reached: number;
  tokensPerCall: string;
  note: string;
}

type EncryptionMode = "on" | "off";
/** What the comparison of encryption on and off reports. */
interface RecallFigures {
  lexical: number;
  semantic: number;
  keywords: number;
  resultTokens: number;
  searchMs: number;
  semanticSearchMs: number;
  readMs: number;
  indexMs: number;
  missed: number;
}

/** The same conversation stored encrypted and in clear, in the same run: whether recall is unchanged, and what encryption costs a search. */
function encryptionComparison(figures: Partial<Record<EncryptionMode, RecallFigures>>): string[] {
  const { on, off } = figures;
  if (!on || !off) return [];
  const n = FACTS.length;
  const same = (a: number, b: number) => (a === b ? "same" : `**${a > b ? "+" : ""}${a - b}**`);
  const ratio = (a: number, b: number) => `×${(a / b).toFixed(2)}`;
  return [
    "## Encryption on and off, in the same run",
    "",
    "The same turns written through the same stores into two databases, one with contents encrypted (`FieldCipher`, local key" +
      " files; the index's terms stored as per-tenant keyed hashes, the query's terms hashed alike) and one in clear (`CONTENT_ENCRYPTION=off`):",
    "",
    "| figure | encrypted | clear | encrypted against clear |",
    "|---|---:|---:|---|",
    `| facts reached, lexical | ${on.lexical} of ${n} | ${off.lexical} of ${n} | ${same(on.lexical, off.lexical)} |`,
    `| facts reached, with embeddings | ${on.semantic} of ${n} | ${off.semantic} of ${n} | ${same(on.semantic, off.semantic)} |`,
    `| control, the fact's own words | ${on.keywords} of ${n} | ${off.keywords} of ${n} | ${same(on.keywords, off.keywords)} |`,
    `| search result tokens, largest | ${fmt(on.resultTokens)} | ${fmt(off.resultTokens)} | ${same(on.resultTokens, off.resultTokens)} |`,
    `| search time, lexical, median | ${on.searchMs.toFixed(1)} ms | ${off.searchMs.toFixed(1)} ms | ${ratio(on.searchMs, off.searchMs)} |`,
    `| search time, with embeddings, median | ${on.semanticSearchMs.toFixed(1)} ms | ${off.semanticSearchMs.toFixed(1)} ms | ` +
      `${ratio(on.semanticSearchMs, off.semanticSearchMs)} |`,
    `| reading the index from MongoDB, median | ${on.readMs.toFixed(1)} ms | ${off.readMs.toFixed(1)} ms | ${ratio(on.readMs, off.readMs)} |`,
    `| indexing a finished turn, lexical, median | ${on.indexMs.toFixed(1)} ms | ${off.indexMs.toFixed(1)} ms | ${ratio(on.indexMs, off.indexMs)} |`,
    "",
  ];
}

async function main() {
  const options = {
    seed: { type: "string", default: "7" },
    embeddings: { type: "string", default: "stand-in" },
    encryption: { type: "string", default: "on,off" },
    write: { type: "boolean", default: false },
  } as const;
  const { values } = parseCliArgs(optionsUsage("bench:recall", options), { options });
  const seed = Number(values.seed);
  if (values.embeddings !== "stand-in" && values.embeddings !== "bedrock") throw new Error("--embeddings is stand-in or bedrock");
  const titan = values.embeddings === "bedrock";
  const modes = values.encryption.split(",").map((m) => m.trim()) as EncryptionMode[];
  if (modes.length === 0 || modes.some((m) => m !== "on" && m !== "off")) throw new Error("--encryption lists on, off or both");
  const random = prng(seed);

  const factTurns = new Map<number, number>();
  const slots = Array.from({ length: TURNS }, (_, i) => i);
  for (let f = 0; f < FACTS.length; f++) factTurns.set(slots.splice(Math.floor(random() * slots.length), 1)[0], f);
  const turns: Turn[] = Array.from({ length: TURNS }, (_, i) => {
    const fact = factTurns.get(i);
    return fact === undefined ? fillerTurn(random) : { question: FACTS[fact].statement, answer: pick(random, ACKNOWLEDGEMENTS) };
  });
  const turnOfFact = new Map([...factTurns].map(([turn, fact]) => [fact, turn + 1]));
  const sharedStems = FACTS.filter((f) => {
    const stated = new Set(recallTerms(f.statement));
    return recallTerms(f.question).some((t) => stated.has(t));
  }).length;

  const mongo = await startEmbeddedMongo();
  const client = new MongoClient(mongo.uri);
  await client.connect();
  const endpoint = await startEmbeddingsEndpoint();
  const keysDir = await mkdtemp(join(tmpdir(), "threadwise-bench-recall-keys-"));
  const figures: Partial<Record<EncryptionMode, RecallFigures>> = {};
  let report: string[] | undefined;
  try {
    for (const encryption of modes) {
      const database = new ThreadwiseDatabase(client, {
        dbName: `bench_recall_${encryption}_${randomUUID().slice(0, 8)}`,
        ...(encryption === "on" && { contentKeys: new LocalTenantKeys(keysDir) }),
      });
      await database.setup();
      const embedder: Embedder = new BedrockEmbedder({
        modelId: TITAN_V2_MODEL_ID,
        client: titan
          ? new BedrockRuntimeClient({})
          : new BedrockRuntimeClient({
              endpoint: endpoint.url,
              region: "us-east-1",
              credentials: { accessKeyId: "AKIDLOCAL", secretAccessKey: "local" },
              maxAttempts: 1,
            }),
      });
      const semanticName = titan ? "Titan Text Embeddings V2 (Bedrock)" : "embeddings stand-in";
      // The indexer indexes lexically when an embedding fails; a benchmark of Titan must not quietly measure that.
      if (titan) await embedder.embed("Can Titan be reached?");

      // Two conversations with the same turns: one indexed lexically (offline), one with embeddings.
      const owner = apiPrincipal("bench");
      const conversations = { lexical: (await database.conversations.create(owner))._id, semantic: (await database.conversations.create(owner))._id };
      const indexMs: Record<keyof typeof conversations, number[]> = { lexical: [], semantic: [] };
      const indexers = {
        lexical: new TurnIndexer({ index: database.recall, messages: database.messages, turns: database.turns }),
        semantic: new TurnIndexer({ index: database.recall, messages: database.messages, turns: database.turns, embedder }),
      };
      const start = Date.UTC(2026, 4, 4, 9);
      for (const key of ["lexical", "semantic"] as const) {
        const conversationId = conversations[key];
        for (const [i, turn] of turns.entries()) {
          const turnId = `${conversationId}-${i + 1}`;
          const at = new Date(start + i * 3_600_000);
          // Recorded as the turn runner records a turn: claimed and begun under the lease, every write under its fence.
          const fence = await database.lease.acquire(conversationId, turnId);
          const claim = await database.turns.claim(turnId, fence, {}, at);
          if (!claim.claimed) throw new Error(`turn ${turnId} was already recorded`);
          const seq = await database.turns.begin(claim.turn, fence, owner, at);
          await database.messages.append({ turnId, seq, role: "user", content: turn.question }, fence, at);
          if (turn.tool) {
            const view = [
              { role: "user" as const, content: turn.question },
              { role: "assistant" as const, content: "", toolCalls: [{ id: "c", name: turn.tool.name, args: turn.tool.args }] },
              { role: "tool" as const, content: turn.tool.output, toolCallId: "c", toolName: turn.tool.name },
            ];
            const call = { turnId, index: 1, startedAt: at, durationMs: 0, view, stats: {} as ModelViewStats, usage: ZERO_USAGE, toolCalls: [] };
            await database.turns.recordModelCall(claim.turn, call, fence, at);
          }
          await database.turns.complete(claim.turn, { answer: turn.answer, usage: ZERO_USAGE, toolCalls: turn.tool ? 1 : 0, durationMs: 0 }, fence, at);
          await database.messages.append({ turnId, seq, role: "assistant", content: turn.answer }, fence, at);
          const began = performance.now();
          await indexers[key].indexFinishedTurns(conversationId, fence);
          indexMs[key].push(performance.now() - began);
          await database.lease.release(fence);
        }
      }

      const policy: ModelViewPolicy = {
        systemPrompt: DEFAULT_SYSTEM_PROMPT,
        finishedTurns: DEFAULT_VIEW_FINISHED_TURNS,
        toolOutputTokens: DEFAULT_VIEW_TOOL_OUTPUT_TOKENS,
        totalBudget: DEFAULT_VIEW_TOTAL_BUDGET,
        outOfSight: { toolName: SEARCH_CONVERSATION_NAME },
      };
      const thread = threadMessages(turns);
      // Each question is embedded once, timed apart; the timed searches reuse its vector.
      const embedMs: number[] = [];
      const queryVectors = new Map<string, Float32Array>();
      const embedOnce: Embedder = {
        modelId: embedder.modelId,
        async embed(text, signal) {
          const known = queryVectors.get(text);
          if (known) return known;
          const began = performance.now();
          const vector = await embedder.embed(text, signal);
          embedMs.push(performance.now() - began);
          queryVectors.set(text, vector);
          return vector;
        },
      };
      const searches = {
        lexical: new ConversationSearch({ index: database.recall }),
        semantic: new ConversationSearch({ index: database.recall, embedder: embedOnce }),
      };
      const reached = { view: 0, replay: 0, lexical: 0, semantic: 0, keywords: 0 };
      const tokens = { view: [] as number[], replay: [] as number[], lexical: [] as number[], semantic: [] as number[] };
      const resultTokens = { lexical: [] as number[], semantic: [] as number[] };
      const searchMs = { lexical: [] as number[], semantic: [] as number[] };
      const missed = { lexical: [] as number[], semantic: [] as number[] };
      // The same search's two parts: reading the index segments from MongoDB, and ranking in memory.
      const readMs: number[] = [];
      const rankMs: number[] = [];
      for (const fact of FACTS) {
        let began = performance.now();
        const entries = await database.recall.entries(conversations.lexical);
        readMs.push(performance.now() - began);
        began = performance.now();
        bm25(entries, recallTerms(fact.question));
        rankMs.push(performance.now() - began);
      }
      for (const [f, fact] of FACTS.entries()) {
        const factTurn = turnOfFact.get(f) as number;
        const state = [...thread, new HumanMessage(fact.question)];
        const view = buildModelView(state, policy);
        const inView = factTurn > TURNS - DEFAULT_VIEW_FINISHED_TURNS;
        if (inView) reached.view++;
        reached.replay++;
        tokens.view.push(view.stats.viewTokens);
        tokens.replay.push(countMessagesTokens(state));
        const control = await searches.lexical.search({
          conversationId: conversations.lexical,
          query: keywordQuestion(fact.statement),
          limit: DEFAULT_RECALL_RESULTS,
          visibleTurns: DEFAULT_VIEW_FINISHED_TURNS,
        });
        if (inView || control.hits.some((h) => h.record.turnNumber === factTurn)) reached.keywords++;
        for (const key of ["lexical", "semantic"] as const) {
          const request = {
            conversationId: conversations[key],
            query: fact.question,
            limit: DEFAULT_RECALL_RESULTS,
            visibleTurns: DEFAULT_VIEW_FINISHED_TURNS,
          };
          let outcome = await searches[key].search(request);
          for (let r = 0; r < TIMING_REPEATS; r++) {
            const began = performance.now();
            outcome = await searches[key].search(request);
            searchMs[key].push(performance.now() - began);
          }
          const found = outcome.hits.some((h) => h.record.turnNumber === factTurn);
          if (inView || found) reached[key]++;
          else missed[key].push(f + 1);
          const answer = formatSearchOutcome(fact.question, outcome, DEFAULT_RECALL_MAX_TOKENS);
          const call = new AIMessage({
            content: "",
            tool_calls: [{ id: "s", name: SEARCH_CONVERSATION_NAME, args: { query: fact.question }, type: "tool_call" }],
          });
          const result = new ToolMessage({ content: answer, tool_call_id: "s", name: SEARCH_CONVERSATION_NAME });
          resultTokens[key].push(countMessageTokens(result));
          tokens[key].push(buildModelView([...state, call, result], policy).stats.viewTokens);
        }
      }

      const n = FACTS.length;
      const ways: Way[] = [
        {
          name: "shaped view alone",
          reached: reached.view,
          tokensPerCall: fmt(median(tokens.view)),
          note: `facts in the last ${DEFAULT_VIEW_FINISHED_TURNS} turns only`,
        },
        { name: "full replay", reached: reached.replay, tokensPerCall: fmt(median(tokens.replay)), note: "every message and tool output, each call" },
        {
          name: "shaped view + search, lexical (offline)",
          reached: reached.lexical,
          tokensPerCall: `${fmt(median(tokens.view))} then ${fmt(median(tokens.lexical))}`,
          note: `search ${median(searchMs.lexical).toFixed(1)} ms median, ${quantile(searchMs.lexical, 0.95).toFixed(1)} ms p95`,
        },
        {
          name: `shaped view + search, lexical + ${semanticName}`,
          reached: reached.semantic,
          tokensPerCall: `${fmt(median(tokens.view))} then ${fmt(median(tokens.semantic))}`,
          note:
            `search ${median(searchMs.semantic).toFixed(1)} ms median, ${quantile(searchMs.semantic, 0.95).toFixed(1)} ms p95, ` +
            `after embedding the query (${median(embedMs).toFixed(1)} ms median ${titan ? "from Bedrock" : "with the local stand-in"})`,
        },
      ];
      const lines = [
        `# Recall benchmark`,
        "",
        `\`npm run bench:recall -- --seed ${seed}\` — ${TURNS} turns, ${n} planted facts, ${n} paraphrased questions ` +
          `(${sharedStems} of ${n} share a word stem with their fact), ` +
          `contents ${encryption === "on" ? "encrypted (local key files; terms as keyed hashes)" : "in clear"}, ` +
          `top ${DEFAULT_RECALL_RESULTS} results, view of the last ${DEFAULT_VIEW_FINISHED_TURNS} turns. Node ` +
          `${process.version}, ${cpus().length} cores, load ${loadavg()[0].toFixed(1)}; embedded MongoDB server.`,
        "",
        "| way | fact reaches the model | tokens per model call (median) | |",
        "|---|---:|---:|---|",
        ...ways.map((w) => `| ${w.name} | ${w.reached} of ${n} (${pct(w.reached / n)}) | ${w.tokensPerCall} | ${w.note} |`),
        `| control: lexical search, questions in the fact's own words | ${reached.keywords} of ${n} ` +
          `(${pct(reached.keywords / n)}) | | "What did I say about <its first two long words>?" |`,
        "",
        `With search a question takes two model calls: the view, then the view with the search call and its result.`,
        "",
        `| search figure | lexical | with ${semanticName} | target |`,
        "|---|---:|---:|---|",
        `| recall (fact in view or top ${DEFAULT_RECALL_RESULTS}) | ${pct(reached.lexical / n)} | ${pct(reached.semantic / n)} | ≥ ${pct(TARGET_RECALL)} |`,
        `| search result tokens, largest | ${fmt(Math.max(...resultTokens.lexical))} | ` +
          `${fmt(Math.max(...resultTokens.semantic))} | ≤ ${fmt(TARGET_RESULT_TOKENS)} |`,
        `| search time at ${TURNS} turns, median / p95 | ${median(searchMs.lexical).toFixed(1)} / ` +
          `${quantile(searchMs.lexical, 0.95).toFixed(1)} ms | ${median(searchMs.semantic).toFixed(1)} / ` +
          `${quantile(searchMs.semantic, 0.95).toFixed(1)} ms | < ${TARGET_SEARCH_MS} ms |`,
        // On a shared, loaded machine the median measures the other processes too; the fastest search is what an idle one approaches.
        `| search time at ${TURNS} turns, fastest of ${searchMs.lexical.length} | ` +
          `${Math.min(...searchMs.lexical).toFixed(1)} ms | ${Math.min(...searchMs.semantic).toFixed(1)} ms | |`,
        `| of which: reading the index from MongoDB / ranking in memory (lexical), median | ` +
          `${median(readMs).toFixed(1)} ms / ${median(rankMs).toFixed(2)} ms | | |`,
        `| embedding the query (before the search), median | | ${median(embedMs).toFixed(1)} ms ` +
          `(${titan ? "Titan on Bedrock" : "local stand-in; Titan's latency in AWS"}) | |`,
        `| indexing a finished turn, median / p95 | ${median(indexMs.lexical).toFixed(1)} / ` +
          `${quantile(indexMs.lexical, 0.95).toFixed(1)} ms | ${median(indexMs.semantic).toFixed(1)} / ` +
          `${quantile(indexMs.semantic, 0.95).toFixed(1)} ms | |`,
        "",
        `Facts missed (by number in \`bench/recall-facts.ts\`): lexical ${missed.lexical.join(", ") || "none"}; with ` +
          `${semanticName} ${missed.semantic.join(", ") || "none"}.`,
        "",
      ];
      figures[encryption] = {
        lexical: reached.lexical,
        semantic: reached.semantic,
        keywords: reached.keywords,
        resultTokens: Math.max(...resultTokens.lexical, ...resultTokens.semantic),
        searchMs: median(searchMs.lexical),
        semanticSearchMs: median(searchMs.semantic),
        readMs: median(readMs),
        indexMs: median(indexMs.lexical),
        missed: missed.lexical.length + missed.semantic.length,
      };
      report ??= lines;
    }
    const lines = [...(report ?? []), ...encryptionComparison(figures)];
    const markdown = lines.join("\n");
    console.log(markdown);
    if (values.write) {
      await writeResults({ "recall.md": markdown });
    }
  } finally {
    await endpoint.close();
    await client.close();
    await mongo.stop();
  }
}

await main();
