/**
 * Writes the context-sufficiency suite (`bench/sufficiency/cases/`) by running the product's own
 * sample tools: `sql_query` on the sample sales database (SQLite), `search_documents` on the bundled
 * handbook, and `query_semantic_model` through the real Power BI client against the local Power BI
 * stand-in (its rows computed from the same sales data). Every tool output in the suite is what the
 * tool returned. Seeded: the same seed writes the same files.
 *
 *   npm run bench:sufficiency:generate [-- --seed 29]
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { optionsUsage, parseCliArgs } from "../../lib/local/cli-args.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { prng } from "../../lib/prng.js";
import { LocalDocumentIndex } from "../../lib/tools/documents/local-document-index.js";
import { createSearchDocumentsTool } from "../../lib/tools/documents/search-documents-tool.js";
import { EntraTokenProvider } from "../../lib/tools/powerbi/entra-token-provider.js";
import { PowerBiClient } from "../../lib/tools/powerbi/power-bi-client.js";
import { createQuerySemanticModelTool } from "../../lib/tools/powerbi/query-semantic-model-tool.js";
import { buildSalesDatabase, SALES_SCHEMA_DESCRIPTION } from "../../lib/tools/sql/sales-dataset.js";
import { createSqlQueryTool } from "../../lib/tools/sql/sql-query-tool.js";
import { SqliteQueryEngine } from "../../lib/tools/sql/sqlite-query-engine.js";
import { openDatabaseImage } from "../../lib/tools/sql/sqlite-wasm.js";
import type { ToolContext, ToolDefinition } from "../../lib/tools/tool.js";
import { startPowerBiEndpoint } from "../../test/support/powerbi-endpoint.js";
import type { Collection } from "mongodb";
import { notRunMessage } from "../../lib/agent/approval-gate.js";
import { ToolError } from "../../lib/errors.js";
import { createFollowUpTool, type FollowUpDocument } from "../../lib/tools/follow-up/create-follow-up-tool.js";
import {
  CASE_KINDS,
  caseSchema,
  type CaseKind,
  type Evidence,
  type FillerRef,
  type Fillers,
  type SufficiencyCase,
  type ToolCallSpec,
  type TurnSpec,
} from "./case-schema.js";
import { evidenceIn } from "./evidence.js";
import { CASES_DIR } from "./paths.js";

/** 30 of each of the first ten kinds; the kinds of issue 46 have 12–15 each (117 cases). */
const CASES_PER_KIND: Partial<Record<CaseKind, number>> = {
  "standing-instruction": 15,
  "digest-excerpt": 15,
  "archived-output": 15,
  "cross-turn-comparison": 12,
  "ordinal-answer": 12,
  "tool-error": 12,
  "multi-hop": 12,
  "approval-outcome": 12,
  "corrected-fact": 12,
};
const casesOf = (kind: CaseKind) => CASES_PER_KIND[kind] ?? 30;
const OFFLOAD_TOKENS = 2_000;

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];
const int = (random: Random, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
const shuffle = <T>(random: Random, items: readonly T[]): T[] => {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
};

const REGIONS = ["North", "South", "East", "West", "Central"] as const;
const SEGMENTS = ["Enterprise", "Mid-Market", "SMB"] as const;
const CHANNELS = ["Direct", "Online", "Partner"] as const;
const MONTHS = ["2026-03", "2026-04", "2026-05", "2026-06", "2026-07", "2026-08", "2026-09", "2026-10"] as const;
const MONTH_NAMES: Record<string, string> = {
  "01": "January",
  "02": "February",
  "03": "March",
  "04": "April",
  "05": "May",
  "06": "June",
  "07": "July",
  "08": "August",
  "09": "September",
  "10": "October",
  "11": "November",
  "12": "December",
};
const monthName = (month: string) => `${MONTH_NAMES[month.slice(5)]} ${month.slice(0, 4)}`;
const ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"];
const money = (n: number) => n.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** A parsed pipe table of `formatResultTable`: columns and rows as text. */
interface Table {
  columns: string[];
  rows: string[][];
}
function parseTable(output: string): Table {
  const lines = output.split("\n");
  return { columns: lines[1].split(" | "), rows: lines.slice(2).map((l) => l.split(" | ")) };
}

interface Tools {
  call(name: ToolCallSpec["name"], args: Record<string, unknown>): Promise<ToolCallSpec>;
  close(): Promise<void>;
}

async function startTools(): Promise<Tools> {
  const engine = new SqliteQueryEngine({ image: () => buildSalesDatabase(), schemaDescription: SALES_SCHEMA_DESCRIPTION });
  const documents = new LocalDocumentIndex();
  // The semantic model answers gross margin by region for each month, computed from the same sales data.
  const db = await openDatabaseImage(await buildSalesDatabase());
  const queries: Record<string, Record<string, unknown>[]> = {};
  for (const month of MONTHS) {
    const rows = db.selectObjects(
      "SELECT region, round(100.0 * sum(gross_profit) / sum(revenue), 2) AS gm, round(sum(revenue), 2) AS revenue FROM sales WHERE month = " +
        "? GROUP BY region ORDER BY region",
      [month],
    ) as { region: string; gm: number; revenue: number }[];
    queries[marginDax(month)] = rows.map((r) => ({ "Region[Name]": r.region, "[Gross Margin %]": r.gm, "[Revenue]": r.revenue }));
  }
  db.close();
  const endpoint = await startPowerBiEndpoint({
    tenantId: "tenant-1",
    clientId: "app-123",
    clientSecret: "s3cr3t-value",
    groupId: "group-1",
    datasetId: "dataset-1",
    queries,
  });
  const secrets = { powerBiClientId: "app-123", powerBiClientSecret: "s3cr3t-value" } as Record<string, string>;
  const tokens = new EntraTokenProvider({
    loginUrl: endpoint.loginUrl,
    tenantId: "tenant-1",
    secrets: { get: async (name) => secrets[name] },
    clientIdSecret: "powerBiClientId",
    clientSecretSecret: "powerBiClientSecret",
  });
  const client = new PowerBiClient({ apiUrl: endpoint.apiUrl, groupId: "group-1", datasetId: "dataset-1", tokens });
  const byName: Record<ToolCallSpec["name"], ToolDefinition> = {
    sql_query: createSqlQueryTool({ engine }),
    search_documents: createSearchDocumentsTool({ retriever: documents }),
    // The suite's caller is queried as a user of its own (the model has no RLS roles here, so every row).
    query_semantic_model: createQuerySemanticModelTool({
      client,
      identities: { entraTenantId: "tenant-1", map: { "api::suite": "suite@alder-pike.example" } },
    }),
    // Recorded nowhere: the suite needs the tool's answer, not the task.
    create_follow_up: createFollowUpTool({ collection: { updateOne: async () => ({}) } as unknown as Collection<FollowUpDocument> }),
  };
  let calls = 0;
  return {
    async call(name, args) {
      const id = `call-${++calls}`;
      const ctx: ToolContext = {
        conversationId: "suite",
        turnId: "suite",
        toolCallId: id,
        caller: { principal: apiPrincipal("suite"), roles: [] },
        mayUse: () => true,
      };
      const tool = byName[name];
      try {
        const output = await tool.run(tool.schema.parse(args), ctx);
        return { id, name, args, output };
      } catch (error) {
        // As the tool registry words a tool's failure for the model (`lib/tools/tool-registry.ts`).
        if (error instanceof ToolError) return { id, name, args, output: `Error: ${name}: ${error.message}`, status: "error" };
        throw error;
      }
    },
    async close() {
      await engine.close();
      await documents.close();
      await endpoint.close();
    },
  };
}

function marginDax(month: string): string {
  return `EVALUATE SUMMARIZECOLUMNS ( Region[Name], FILTER ( 'Date', 'Date'[Month] = "${month}" ), "Gross Margin %", [Gross Margin %], "Revenue", [Revenue] )`;
}

/** Ordinary work chatter, every tool output real: the turns between a case's reference and its follow-up. */
async function buildFillers(tools: Tools, random: Random): Promise<Fillers> {
  const fillers: Fillers = {};
  let n = 0;
  const add = (turn: TurnSpec) => {
    fillers[`f${String(++n).padStart(3, "0")}`] = turn;
  };
  for (const month of MONTHS) {
    const call = await tools.call("sql_query", {
      sql: `SELECT region, round(sum(revenue), 2) AS revenue FROM sales WHERE month = '${month}' GROUP BY region ORDER BY revenue DESC`,
    });
    const t = parseTable(call.output);
    add({
      question: `How did the regions compare on revenue in ${monthName(month)}?`,
      steps: [[call]],
      answer: `${t.rows[0][0]} led ${monthName(month)} with ${t.rows[0][1]} in revenue; ${t.rows[t.rows.length - 1][0]} was lowest.`,
    });
    const channel = pick(random, CHANNELS);
    const c2 = await tools.call("sql_query", {
      sql:
        `SELECT count(DISTINCT order_id) AS orders FROM sales WHERE month = '${month}' AND order_id IN (SELECT order_id FROM orders ` +
        `WHERE channel = '${channel}')`,
    });
    add({
      question: `How many ${channel.toLowerCase()} orders did we take in ${monthName(month)}?`,
      steps: [[c2]],
      answer: `We took ${parseTable(c2.output).rows[0][0]} orders through the ${channel} channel in ${monthName(month)}.`,
    });
  }
  const topics = [
    ["What is our policy on discount approvals?", "discount approval"],
    ["How is gross margin defined?", "gross margin definition"],
    ["What did the September report say?", "September 2026 report"],
    ["How do follow-ups get assigned?", "follow-up process"],
    ["Which customers count as Enterprise?", "customer segments Enterprise"],
    ["What does the supplier notice for networking say?", "supplier notice networking cost"],
    ["How are regions organised?", "regions managers"],
    ["What is the discount rate metric?", "discount rate metric"],
  ];
  for (const [question, query] of topics) {
    const call = await tools.call("search_documents", { query });
    const first = call.output.split("\n\n")[1]?.split("\n")[0] ?? "";
    const source = /source: ([^ |]+)/.exec(first)?.[1] ?? "the handbook";
    add({ question, steps: [[call]], answer: `According to ${source}, ${call.output.split("\n\n")[1]?.split("\n")[1]?.slice(0, 160) ?? "see the passage"}.` });
  }
  const chatter: [string, string][] = [
    [
      "Can you draft a two-line note to the team about Friday's review?",
      'Here is a draft: "Hi all, Friday\'s review starts at 10:00; please bring your regional numbers. Thanks!"',
    ],
    ["Thanks, that's helpful.", "You're welcome. Tell me if you need anything else."],
    [
      "What's a good way to present month-over-month change?",
      "Show the current value, the previous one and the change in percent; a small bar or sparkline helps.",
    ],
    [
      "Make the tone of that note a bit more formal.",
      'Here is a more formal version: "Dear colleagues, the review takes place on Friday at 10:00. Please bring your regional figures."',
    ],
    ["Remind me what a pivot table is good for.", "A pivot table summarises rows by the values of some columns, for example revenue by region and month."],
    ["OK, let's move on.", "Sure. What would you like to look at next?"],
  ];
  for (const [question, answer] of chatter) add({ question, steps: [], answer });
  return fillers;
}

interface Builder {
  kind: CaseKind;
  index: number;
  random: Random;
  turns: (TurnSpec | FillerRef)[];
  evidence: Evidence[];
}

function fillerRefs(random: Random, fillers: Fillers, count: number): FillerRef[] {
  const names = Object.keys(fillers);
  return Array.from({ length: count }, () => ({ filler: pick(random, names) }));
}

interface TopCustomers {
  call: ToolCallSpec;
  table: Table;
  region: string;
  month: string;
}
async function topCustomers(tools: Tools, random: Random, limit: number): Promise<TopCustomers> {
  const region = pick(random, REGIONS);
  const month = pick(random, MONTHS);
  const call = await tools.call("sql_query", {
    sql:
      `SELECT customer, segment, round(sum(revenue), 2) AS revenue, count(DISTINCT order_id) AS orders FROM sales ` +
      `WHERE region = '${region}' AND month = '${month}' GROUP BY customer, segment ORDER BY revenue DESC LIMIT ${limit}`,
  });
  return { call, table: parseTable(call.output), region, month };
}

const DOC_TOPICS = [
  "discount approval",
  "gross margin definition",
  "September 2026 report",
  "follow-up process",
  "customer segments",
  "supplier notice networking cost",
  "regions managers",
  "pricing and cost policy",
  "October 2026 report",
  "data dictionary sales columns",
];

/** A document search of 5 passages, and its `k`-th passage (3rd–5th: past the output's first 400 characters). */
async function documentSearch(tools: Tools, random: Random) {
  const topic = pick(random, DOC_TOPICS);
  const call = await tools.call("search_documents", { query: topic });
  const passages = call.output.split(/\n\n(?=\[\d+\] source: )/).slice(1);
  const candidates = [2, 3, 4].filter((k) => k < passages.length && call.output.indexOf(passages[k]) > 400);
  const k = pick(random, candidates);
  const [header, ...body] = passages[k].split("\n");
  const text = body.join(" ").replace(/\s+/g, " ").trim();
  const quote = text.split(" ").slice(0, 8).join(" ");
  const source = /source: ([^ |]+)/.exec(header)?.[1] ?? "the handbook";
  const section = (header.split(" | ")[1] ?? "").split(" \u203a ").pop() ?? "";
  const first = passages[0].split("\n").slice(1).join(" ").replace(/\s+/g, " ").slice(0, 140);
  return { call, topic, k, quote, source, section, question: `What does the handbook say about ${topic}?`, answer: `The first passage says: ${first}` };
}

/** 25–30 customers of a region and month (inline: under the offload threshold), and a row past the output's first 400 characters. */
async function longCustomerList(tools: Tools, random: Random) {
  const { call, table, region, month } = await topCustomers(tools, random, int(random, 25, 30));
  if (countTextTokens(call.output) > OFFLOAD_TOKENS) throw new Error("expected an output under the offload threshold");
  const deep = table.rows.map((r, i) => ({ r, i })).filter(({ r, i }) => i >= 10 && call.output.indexOf(r.join(" | ")) > 400);
  const { r: row, i: k } = pick(random, deep);
  return {
    call,
    table,
    region,
    month,
    row,
    k,
    question: `List every ${region} customer for ${monthName(month)}, with revenue.`,
    answer: `${table.rows[0][0]} led ${region} in ${monthName(month)} with ${money(Number(table.rows[0][2]))}; ${table.rows.length} customers in all.`,
  };
}

type KindBuilder = (tools: Tools, fillers: Fillers, b: Builder) => Promise<{ note: string; followUp: string; activeSteps?: ToolCallSpec[][] }>;

const answerTurn = (question: string, calls: ToolCallSpec[], answer: string): TurnSpec => ({ question, steps: calls.length ? [calls] : [], answer });

const KINDS: Record<CaseKind, KindBuilder> = {
  /** 1. "those customers": entities the answer named. */
  async "answer-entity"(tools, fillers, b) {
    const { call, table, region, month } = await topCustomers(tools, b.random, 10);
    const named = table.rows.slice(0, 3);
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 4)));
    b.turns.push(
      answerTurn(
        `Who were our biggest customers in ${region} in ${monthName(month)}?`,
        [call],
        `In ${region}, ${monthName(month)}'s largest accounts were ${named[0][0]} (${money(Number(named[0][2]))}), ${named[1][0]} ` +
          `(${money(Number(named[1][2]))}) ` +
          `and ${named[2][0]} (${money(Number(named[2][2]))}); the ten largest brought in most of the region's revenue.`,
      ),
    );
    const at = b.turns.length - 1;
    for (const [i, row] of named.entries()) b.evidence.push({ id: `customer-${i + 1}`, source: "answer", turn: at, text: row[0] });
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    const followUp = pick(b.random, [
      "Which products did those three customers buy most?",
      "Can you show the order history of those customers for the last quarter?",
      "Are those customers growing compared with a year ago?",
      "Which sales reps look after those accounts?",
    ]);
    return { note: "follow-up about the customers an earlier answer named", followUp };
  },

  /** 2. "the fourth one": an entity only in the tool result. */
  async "result-entity"(tools, fillers, b) {
    const { call, table, region, month } = await topCustomers(tools, b.random, int(b.random, 8, 12));
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 3)));
    b.turns.push(
      answerTurn(
        `List the top customers in ${region} for ${monthName(month)}.`,
        [call],
        `${table.rows[0][0]} led ${region} in ${monthName(month)} with ${money(Number(table.rows[0][2]))}, ahead of ${table.rows[1][0]}. ` +
          `The full list has ${table.rows.length} accounts.`,
      ),
    );
    const at = b.turns.length - 1;
    const k = int(b.random, 3, Math.min(table.rows.length, 8) - 1);
    b.evidence.push({ id: "row-customer", source: "tool-result", turn: at, text: table.rows[k][0] });
    b.evidence.push({ id: "row-revenue", source: "tool-result", turn: at, text: table.rows[k][2] });
    if (b.random() < 0.3) b.turns.push(...fillerRefs(b.random, fillers, 1));
    const followUp = pick(b.random, [
      `What about the ${ORDINALS[k]} one on that list: how much did it spend, and how many orders?`,
      `Tell me more about the ${ORDINALS[k]} customer in that list.`,
      `Who was ${ORDINALS[k]} in that ranking, and what was their revenue?`,
    ]);
    return { note: `follow-up about row ${k + 1} of an earlier result the answer did not name`, followUp };
  },

  /** 3. "and for region B?": a query's parameters carried forward. */
  async "carried-parameters"(tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    const segment = pick(b.random, SEGMENTS);
    const month = pick(b.random, MONTHS);
    const channel = pick(b.random, CHANNELS);
    const call = await tools.call("sql_query", {
      sql:
        `SELECT category, round(100.0 * sum(gross_profit) / sum(revenue), 1) AS gross_margin_pct, round(sum(revenue), 2) AS revenue FROM sales ` +
        `WHERE region = '${region}' AND segment = '${segment}' AND month = '${month}' AND order_id IN (SELECT order_id FROM orders WHERE ` +
        `channel = '${channel}') ` +
        `GROUP BY category ORDER BY gross_margin_pct`,
    });
    const t = parseTable(call.output);
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 3)));
    b.turns.push(
      answerTurn(
        `What was gross margin by category for ${segment} customers buying through the ${channel.toLowerCase()} channel in ${region}, ${monthName(month)}?`,
        [call],
        `In ${region}, margin was lowest in ${t.rows[0]?.[0] ?? "no category"} (${t.rows[0]?.[1] ?? "n/a"}%) and highest in ` +
          `${t.rows[t.rows.length - 1]?.[0] ?? "none"} ` +
          `(${t.rows[t.rows.length - 1]?.[1] ?? "n/a"}%).`,
      ),
    );
    const at = b.turns.length - 1;
    b.evidence.push({ id: "segment", source: "parameters", turn: at, text: `segment = '${segment}'` });
    b.evidence.push({ id: "channel", source: "parameters", turn: at, text: `channel = '${channel}'` });
    b.evidence.push({ id: "month", source: "parameters", turn: at, text: `month = '${month}'` });
    const other = pick(
      b.random,
      REGIONS.filter((r) => r !== region),
    );
    const followUp = pick(b.random, [`And for ${other}?`, `Same breakdown for the ${other} region, please.`, `How does ${other} compare on that?`]);
    return { note: "a follow-up that changes one filter of the last query and keeps the others", followUp };
  },

  /** 4. "last month" resolved turns ago. */
  async "time-anchor"(tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    const anchor = pick(b.random, [
      { said: "last month", where: "month = '2026-10'", evidence: "2026-10", alt: ["October 2026"] },
      { said: "last quarter", where: "order_date BETWEEN '2026-07-01' AND '2026-09-30'", evidence: "2026-07-01", alt: ["July to September 2026", "Q3 2026"] },
      { said: "the summer", where: "month BETWEEN '2026-06' AND '2026-08'", evidence: "2026-06", alt: ["June to August 2026"] },
      { said: "so far this year", where: "order_date BETWEEN '2026-01-01' AND '2026-10-31'", evidence: "2026-01-01", alt: ["January to October 2026"] },
    ]);
    const call = await tools.call("sql_query", {
      sql:
        `SELECT round(sum(revenue), 2) AS revenue, round(100.0 * sum(gross_profit) / sum(revenue), 1) AS gross_margin_pct FROM sales ` +
        `WHERE region = '${region}' AND ${anchor.where}`,
    });
    const t = parseTable(call.output);
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 3)));
    const restates = b.random() < 0.4;
    b.turns.push(
      answerTurn(
        `How did ${region} do ${anchor.said}?`,
        [call],
        `${region} brought in ${money(Number(t.rows[0][0]))} ${restates ? `in ${anchor.alt[0]}` : anchor.said}, at a gross margin of ${t.rows[0][1]}%.`,
      ),
    );
    const at = b.turns.length - 1;
    b.evidence.push({ id: "period", source: "parameters", turn: at, text: anchor.evidence, alternatives: anchor.alt });
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 2, 9)));
    const followUp = pick(b.random, [
      `Going back to ${region}: break the ${anchor.said} figure you gave me down by channel.`,
      `For that ${region} number from ${anchor.said}, which category contributed most?`,
      `Compare ${region}'s ${anchor.said} revenue you quoted with the same period a year earlier.`,
    ]);
    return { note: `"${anchor.said}" resolved several turns earlier`, followUp };
  },

  /** 5. "no, I meant gross margin". */
  async correction(tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    const segment = pick(b.random, SEGMENTS);
    const month = pick(b.random, MONTHS);
    const call = await tools.call("sql_query", {
      sql:
        `SELECT round(100.0 * sum(discount_amount) / sum(revenue + discount_amount), 2) AS discount_rate_pct FROM sales WHERE region = ` +
        `'${region}' AND segment = '${segment}' AND month = '${month}'`,
    });
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 3)));
    b.turns.push(
      answerTurn(
        `What was the discount rate for ${segment} accounts in ${region} in ${monthName(month)}?`,
        [call],
        `The discount rate there was ${parseTable(call.output).rows[0][0]}%, within policy.`,
      ),
    );
    const at = b.turns.length - 1;
    b.evidence.push({ id: "region", source: "parameters", turn: at, text: `region = '${region}'` });
    b.evidence.push({ id: "segment", source: "parameters", turn: at, text: `segment = '${segment}'` });
    b.evidence.push({ id: "month", source: "parameters", turn: at, text: `month = '${month}'`, alternatives: [monthName(month)] });
    const followUp = pick(b.random, [
      "No, I meant gross margin, not discount.",
      "Sorry, I wanted the gross margin there.",
      "Actually, make that gross margin instead.",
    ]);
    return { note: "a correction that keeps the earlier query's filters", followUp };
  },

  /** 6. A reference 20, 50 or 150 turns back. */
  async "far-reference"(tools, fillers, b) {
    const distance = [20, 50, 150][b.index % 3];
    const { call, table, region, month } = await topCustomers(tools, b.random, 5);
    const [customer, , revenue] = table.rows[int(b.random, 0, 2)];
    const short = customer.split(" ")[0];
    b.turns.push(...fillerRefs(b.random, fillers, 2));
    b.turns.push(
      answerTurn(
        `How much did ${customer} spend with us in ${region} in ${monthName(month)}?`,
        [call],
        `${customer} spent ${money(Number(revenue))} in ${monthName(month)}, one of the five largest accounts in ${region} that month.`,
      ),
    );
    b.evidence.push({ id: "amount", source: "answer", turn: b.turns.length - 1, text: money(Number(revenue)) });
    b.turns.push(...fillerRefs(b.random, fillers, distance - 1));
    const followUp = pick(b.random, [
      `Way back you told me what ${customer} spent in ${MONTH_NAMES[month.slice(5)]}. What was that amount again?`,
      `What was the ${short} figure for ${MONTH_NAMES[month.slice(5)]} you gave me a while ago?`,
      `How much had ${customer} spent that month, as you said earlier?`,
    ]);
    return { note: `a reference ${distance} turns back`, followUp };
  },

  /** 7. Several tools in one turn, follow-ups across them. */
  async "several-tools"(tools, fillers, b) {
    const month = pick(b.random, MONTHS);
    const region = pick(b.random, REGIONS);
    const sql = await tools.call("sql_query", {
      sql:
        `SELECT customer, round(100.0 * sum(discount_amount) / sum(revenue + discount_amount), 1) AS discount_pct FROM sales WHERE ` +
        `region = '${region}' AND month = '${month}' GROUP BY customer HAVING discount_pct > 10 ORDER BY discount_pct DESC LIMIT 8`,
    });
    const docs = await tools.call("search_documents", { query: "discount approval above 15% VP" });
    const calls = [sql, docs];
    const withPbi = b.index % 3 === 0;
    if (withPbi) calls.push(await tools.call("query_semantic_model", { dax: marginDax(month) }));
    const t = parseTable(sql.output);
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 3)));
    b.turns.push(
      answerTurn(
        `Which ${region} customers got big discounts in ${monthName(month)}, and is that within policy?`,
        calls,
        `${t.rows.length} ${region} customers had discounts above 10% in ${monthName(month)}, highest ${t.rows[0]?.[0] ?? "none"}. ` +
          "The discount policy needs a higher approval above 15%, so the largest ones should be checked.",
      ),
    );
    const at = b.turns.length - 1;
    const passage = docs.output.split("\n\n")[1]?.split("\n").slice(1).join(" ") ?? docs.output;
    const sentence = passage.split(/(?<=[.!?])\s+/).find((s) => s.length > 40 && /\d/.test(s)) ?? passage.slice(0, 80);
    const quote = sentence.split(" ").slice(0, 8).join(" ");
    const focus = b.index % 3;
    let followUp: string;
    if (focus === 0 && withPbi) {
      const pbi = parseTable(calls[2].output);
      const row = pick(
        b.random,
        pbi.rows.filter((r) => r[0] !== region),
      );
      b.evidence.push({ id: "pbi-margin", source: "tool-result", turn: at, text: row[1] });
      followUp = `And from the semantic model you queried, what was ${row[0]}'s gross margin that month?`;
    } else if (focus === 1 && t.rows.length > 2) {
      const row = t.rows[Math.min(t.rows.length - 1, int(b.random, 1, 4))];
      b.evidence.push({ id: "sql-row", source: "tool-result", turn: at, text: row[0] });
      b.evidence.push({ id: "sql-discount", source: "tool-result", turn: at, text: row[1] });
      followUp = "Which of those customers were above 15%, and by how much?";
    } else {
      b.evidence.push({ id: "policy-text", source: "tool-result", turn: at, text: quote });
      followUp = "What exactly does the policy passage you found say about who approves those discounts?";
    }
    b.turns.push(...fillerRefs(b.random, fillers, b.random() < 0.3 ? 1 : 0));
    return { note: `a turn that ran ${calls.length} tools, follow-up about one of them`, followUp };
  },

  /** 8. Facts and preferences the user stated. */
  async "user-fact"(_tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    const people = ["Lena Novak", "Omar Haddad", "Grace Liu", "Pavel Ivanov", "Sofia Rossi", "Kwame Mensah"];
    const facts = [
      { said: `I look after the ${region} region`, follow: "How is my region doing this month compared with last month?" },
      { said: `my manager is ${pick(b.random, people)}`, follow: "Draft a short update for my manager about this quarter's numbers." },
      { said: "I want amounts in thousands of euros", follow: "Give me revenue by region for October the way I like amounts shown." },
      { said: `our fiscal year starts in ${pick(b.random, ["April", "July", "February"])}`, follow: "What is our revenue for the fiscal year to date?" },
      {
        said: `my biggest account is ${pick(b.random, ["Helios Freight Group", "Cobalt Ridge Hospitals", "Juniper Street Markets"])}`,
        follow: "How did my biggest account do last month?",
      },
    ];
    const fact = facts[b.index % facts.length];
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    b.turns.push(answerTurn(`Before we start: ${fact.said}.`, [], "Noted, I'll keep that in mind."));
    b.evidence.push({ id: "fact", source: "user", turn: b.turns.length - 1, text: fact.said });
    b.turns.push(...fillerRefs(b.random, fillers, [2, 5, 12, 25, 40, 60][b.index % 6]));
    return { note: "a fact the user stated, used turns later", followUp: fact.follow };
  },

  /** 9. A long active turn under budget pressure. */
  async "long-active-turn"(tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 2, 5)));
    const steps: ToolCallSpec[][] = [];
    const months = shuffle(b.random, MONTHS);
    const count = int(b.random, 12, 16);
    for (let i = 0; i < count; i++) {
      const month = months[i % months.length];
      const limit = int(b.random, 70, 85);
      steps.push([
        await tools.call("sql_query", {
          sql:
            `SELECT customer, product, round(sum(revenue), 2) AS revenue, round(sum(gross_profit), 2) AS gross_profit FROM sales ` +
            `WHERE region = '${region}' AND month = '${month}' ${i % 2 ? "AND segment <> 'SMB'" : ""} GROUP BY customer, product ORDER BY ` +
            `revenue DESC LIMIT ${limit}`,
        }),
      ]);
    }
    const first = parseTable(steps[0][0].output);
    const other = parseTable(steps[Math.floor(count / 2)][0].output);
    b.evidence.push({ id: "first-result", source: "tool-result", turn: "active", text: first.rows[0][2] });
    b.evidence.push({ id: "middle-result", source: "tool-result", turn: "active", text: other.rows[2][2] });
    return {
      note: `an active turn of ${count} tool results that together exceed the budget`,
      followUp: `Build a full ${region} review: top customer-product pairs for each month, with revenue and gross profit.`,
      activeSteps: steps,
    };
  },

  /** 10. An output too large for the view (offloaded). */
  async "offloaded-output"(tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    const month = pick(b.random, MONTHS);
    const call = await tools.call("sql_query", {
      sql:
        `SELECT order_id, order_date, customer, product, quantity, round(revenue, 2) AS revenue FROM sales WHERE region = '${region}' ` +
        `AND month = '${month}' ORDER BY order_date, order_id LIMIT 200`,
    });
    if (countTextTokens(call.output) <= OFFLOAD_TOKENS) throw new Error("expected an output over the offload threshold");
    const t = parseTable(call.output);
    const row = t.rows[int(b.random, Math.floor(t.rows.length / 2), t.rows.length - 1)];
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 3)));
    const followUp = `What was the revenue on order ${row[0]} (${row[2]}, ${row[1]}) in that list?`;
    if (b.index % 3 === 2) {
      b.evidence.push({ id: "row", source: "tool-result", turn: "active", text: `${row[0]} | ${row[1]} | ${row[2]}` });
      b.evidence.push({ id: "revenue", source: "tool-result", turn: "active", text: row[5] });
      return {
        note: "an offloaded output in the active turn",
        followUp: `List every ${region} order line from ${monthName(month)}, then tell me the revenue on order ${row[0]} (${row[2]}, ${row[1]}).`,
        activeSteps: [[call]],
      };
    }
    b.turns.push(
      answerTurn(
        `List the ${region} order lines for ${monthName(month)}.`,
        [call],
        `There were ${t.rows.length} order lines in ${region} in ${monthName(month)}, starting with order ${t.rows[0][0]} from ` +
          `${t.rows[0][2]}. The full list is in the tool output.`,
      ),
    );
    const at = b.turns.length - 1;
    b.evidence.push({ id: "row", source: "tool-result", turn: at, text: `${row[0]} | ${row[1]} | ${row[2]}` });
    b.evidence.push({ id: "revenue", source: "tool-result", turn: at, text: row[5] });
    if (b.random() < 0.4) b.turns.push(...fillerRefs(b.random, fillers, 1));
    return { note: "an offloaded output of a finished turn", followUp };
  },

  /** 11. A standing instruction ("from now on …") that governs a later answer that does not mention it. */
  async "standing-instruction"(_tools, fillers, b) {
    const distance = [5, 25, 80][b.index % 3];
    const instruction = [
      { said: "From now on, report all amounts in EUR.", evidence: "amounts in EUR", ack: "Understood: I will report amounts in EUR from now on." },
      { said: "From now on, round every figure to the nearest thousand.", evidence: "round every figure to the nearest thousand", ack: "Understood." },
      { said: "Always show gross margin next to revenue from now on.", evidence: "show gross margin next to revenue", ack: "Will do." },
      { said: "From now on, leave the SMB segment out of every analysis.", evidence: "leave the SMB segment out", ack: "Understood, SMB is out of scope." },
      { said: "Never give me more than five rows in a table, please.", evidence: "more than five rows", ack: "Noted: five rows at most." },
    ][Math.floor(b.index / 3) % 5];
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    b.turns.push(answerTurn(instruction.said, [], instruction.ack));
    b.evidence.push({ id: "instruction", source: "user", turn: b.turns.length - 1, text: instruction.evidence });
    b.turns.push(...fillerRefs(b.random, fillers, distance));
    const region = pick(b.random, REGIONS);
    const month = pick(b.random, MONTHS);
    const followUp = pick(b.random, [
      `What was revenue in ${region} in ${monthName(month)}?`,
      `Give me the top customers in ${region} for ${monthName(month)}.`,
      `How did ${region} compare with the other regions in ${monthName(month)}?`,
    ]);
    return { note: `a standing instruction given ${distance} turns before a question that does not mention it`, followUp };
  },

  /** 12. A row or passage of a recent output under the offload threshold, past what the turn digest shows of it. */
  async "digest-excerpt"(tools, fillers, b) {
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 1, 3)));
    const after = int(b.random, 1, 4);
    if (b.index % 2 === 0) {
      const doc = await documentSearch(tools, b.random);
      b.turns.push(answerTurn(doc.question, [doc.call], doc.answer));
      b.evidence.push({ id: "passage", source: "tool-result", turn: b.turns.length - 1, text: doc.quote });
      b.turns.push(...fillerRefs(b.random, fillers, after));
      return {
        note: `passage ${doc.k + 1} of a document search ${after + 1} turns back, inside the window`,
        followUp: `In the handbook search about ${doc.topic} a few questions ago, what did the ${ORDINALS[doc.k]} passage say?`,
      };
    }
    const list = await longCustomerList(tools, b.random);
    b.turns.push(answerTurn(list.question, [list.call], list.answer));
    b.evidence.push({ id: "row-customer", source: "tool-result", turn: b.turns.length - 1, text: list.row[0] });
    b.evidence.push({ id: "row-revenue", source: "tool-result", turn: b.turns.length - 1, text: list.row[2] });
    b.turns.push(...fillerRefs(b.random, fillers, after));
    return {
      note: `row ${list.k + 1} of a ${list.table.rows.length}-row result ${after + 1} turns back, inside the window`,
      followUp: `In that list of ${list.region} customers a few questions ago, who was number ${list.k + 1}, and what was their revenue?`,
    };
  },

  /** 13. A row or passage past the first 400 characters of an output in a turn out of the window. */
  async "archived-output"(tools, fillers, b) {
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    const after = int(b.random, 12, 40);
    if (b.index % 2 === 0) {
      const doc = await documentSearch(tools, b.random);
      b.turns.push(answerTurn(doc.question, [doc.call], doc.answer));
      b.evidence.push({ id: "passage", source: "tool-result", turn: b.turns.length - 1, text: doc.quote });
      b.turns.push(...fillerRefs(b.random, fillers, after));
      return {
        note: `passage ${doc.k + 1} of a document search ${after + 1} turns back`,
        followUp: `Long ago you searched the handbook about ${doc.topic}. What did the passage from ${doc.source} under "${doc.section}" say?`,
      };
    }
    const list = await longCustomerList(tools, b.random);
    b.turns.push(answerTurn(list.question, [list.call], list.answer));
    b.evidence.push({ id: "row-revenue", source: "tool-result", turn: b.turns.length - 1, text: list.row[2] });
    b.turns.push(...fillerRefs(b.random, fillers, after));
    return {
      note: `row ${list.k + 1} of a ${list.table.rows.length}-row result ${after + 1} turns back`,
      followUp: `A while ago you listed the ${list.region} customers for ${monthName(list.month)}. What revenue did ${list.row[0]} have in that list?`,
    };
  },

  /** 14. A comparison of two figures given in different turns. */
  async "cross-turn-comparison"(tools, fillers, b) {
    const month = pick(b.random, MONTHS);
    const [first, second] = shuffle(b.random, REGIONS).slice(0, 2);
    const figure = async (region: string) => {
      const call = await tools.call("sql_query", {
        sql: `SELECT round(sum(revenue), 2) AS revenue FROM sales WHERE region = '${region}' AND month = '${month}'`,
      });
      return { call, revenue: money(Number(parseTable(call.output).rows[0][0])) };
    };
    const a = await figure(first);
    const c = await figure(second);
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    b.turns.push(answerTurn(`What was ${first}'s revenue in ${monthName(month)}?`, [a.call], `${first} brought in ${a.revenue} in ${monthName(month)}.`));
    b.evidence.push({ id: "first-figure", source: "answer", turn: b.turns.length - 1, text: a.revenue });
    const gap = [1, 4, 8, 15][b.index % 4];
    b.turns.push(...fillerRefs(b.random, fillers, gap));
    b.turns.push(answerTurn(`And ${second}, same month?`, [c.call], `${second} had ${c.revenue} in ${monthName(month)}.`));
    b.evidence.push({ id: "second-figure", source: "answer", turn: b.turns.length - 1, text: c.revenue });
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 3)));
    return {
      note: `a comparison of figures given ${gap + 1} turns apart`,
      followUp: pick(b.random, [
        `Which was higher, the ${first} or the ${second} revenue you gave me, and by how much?`,
        `Put the ${first} and ${second} figures you quoted side by side: what is the difference?`,
      ]),
    };
  },

  /** 15. "The third row you showed": an ordinal reference into a list an earlier answer gave. */
  async "ordinal-answer"(tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    const month = pick(b.random, MONTHS);
    const call = await tools.call("sql_query", {
      sql:
        `SELECT product, round(sum(revenue), 2) AS revenue FROM sales WHERE region = '${region}' AND month = '${month}' ` +
        "GROUP BY product ORDER BY revenue DESC LIMIT 5",
    });
    const t = parseTable(call.output);
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    b.turns.push(
      answerTurn(
        `What were the five best-selling products in ${region} in ${monthName(month)}?`,
        [call],
        `The top five in ${region}, ${monthName(month)}:\n${t.rows.map((r, i) => `${i + 1}. ${r[0]}: ${money(Number(r[1]))}`).join("\n")}`,
      ),
    );
    const k = int(b.random, 1, 4);
    b.evidence.push({ id: "row", source: "answer", turn: b.turns.length - 1, text: t.rows[k][0] });
    const distance = [0, 2, 6, 12][b.index % 4];
    b.turns.push(...fillerRefs(b.random, fillers, distance));
    return {
      note: `row ${k + 1} of a list an answer gave ${distance + 1} turns back`,
      followUp: pick(b.random, [
        `The ${ORDINALS[k]} row you showed me: how did that product do the month before?`,
        `Go back to the ${ORDINALS[k]} product on your top-five list. Which customers bought it most?`,
      ]),
    };
  },

  /** 16. A tool call that failed: what the error said. */
  async "tool-error"(tools, fillers, b) {
    const region = pick(b.random, REGIONS);
    const month = pick(b.random, MONTHS);
    const broken = pick(b.random, [
      { sql: `SELECT regoin, sum(revenue) FROM sales WHERE month = '${month}' GROUP BY regoin`, what: "revenue by region" },
      { sql: `SELECT customer, sum(margin) FROM sales WHERE region = '${region}' GROUP BY customer`, what: `margin by customer in ${region}` },
      { sql: `SELECT * FROM sale WHERE region = '${region}'`, what: `the raw ${region} sales` },
      { sql: `DELETE FROM sales WHERE region = '${region}'`, what: `the ${region} rows cleared out` },
    ]);
    const failed = await tools.call("sql_query", { sql: broken.sql });
    if (failed.status !== "error") throw new Error("expected the query to fail");
    const message = failed.output.replace(/^Error: sql_query: /, "");
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    b.turns.push(answerTurn(`Can you get me ${broken.what}?`, [failed], "That query did not work, so I have no figures for it yet."));
    b.evidence.push({ id: "error", source: "tool-result", turn: b.turns.length - 1, text: message.slice(0, 60) });
    const distance = [0, 3, 7, 14][b.index % 4];
    b.turns.push(...fillerRefs(b.random, fillers, distance));
    return {
      note: `a query that failed ${distance + 1} turns back`,
      followUp: `When I asked you for ${broken.what}, what exactly did the database answer?`,
    };
  },

  /** 17. Two hops: an entity an answer named, then a row of a later result about it. */
  async "multi-hop"(tools, fillers, b) {
    const { call, table, region, month } = await topCustomers(tools, b.random, 5);
    const customer = table.rows[0][0];
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    b.turns.push(answerTurn(`Who was our top customer in ${region} in ${monthName(month)}?`, [call], `${customer}, with ${money(Number(table.rows[0][2]))}.`));
    b.evidence.push({ id: "customer", source: "answer", turn: b.turns.length - 1, text: customer });
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    const lines = await tools.call("sql_query", {
      sql:
        `SELECT order_id, order_date, product, quantity, round(revenue, 2) AS revenue FROM sales WHERE customer = '${customer.replace(/'/g, "''")}' ` +
        `AND month = '${month}' ORDER BY revenue DESC LIMIT 20`,
    });
    const lt = parseTable(lines.output);
    b.turns.push(
      answerTurn(
        "Show me that customer's order lines that month.",
        [lines],
        `They had ${lt.rows.length} order lines in ${monthName(month)}; the list is sorted by revenue.`,
      ),
    );
    b.evidence.push({ id: "largest-product", source: "tool-result", turn: b.turns.length - 1, text: lt.rows[0][2] });
    const distance = [0, 3, 8][b.index % 3];
    b.turns.push(...fillerRefs(b.random, fillers, distance));
    return {
      note: `an entity of one answer and a row of a later result, ${distance + 1} turns back`,
      followUp: `For the top customer you named, which product was on their largest order line, and who was that customer again?`,
    };
  },

  /** 18. What became of a call that needed approval: approved (its id), rejected (who and why) or expired. */
  async "approval-outcome"(tools, fillers, b) {
    const owner = pick(b.random, ["Lena Novak", "Omar Haddad", "Grace Liu", "Pavel Ivanov", "Sofia Rossi", "Kwame Mensah"]);
    const region = pick(b.random, REGIONS);
    const args = { title: `Review ${region} discounts above 15%`, owner, dueDate: "2026-11-20" };
    const outcome = b.index % 3;
    let call: ToolCallSpec;
    let followUp: string;
    if (outcome === 0) {
      call = await tools.call("create_follow_up", args);
      const id = /FU-[0-9A-F]{8}/.exec(call.output)?.[0];
      if (!id) throw new Error("expected a follow-up id");
      b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
      b.turns.push(answerTurn(`Create a follow-up for ${owner} to review ${region} discounts.`, [call], "Done: the follow-up is recorded."));
      b.evidence.push({ id: "follow-up-id", source: "tool-result", turn: b.turns.length - 1, text: id });
      followUp = `What is the id of the follow-up you created for ${owner}? I need it for the board.`;
    } else {
      const id = `call-x${b.index}`;
      const reason = pick(b.random, ["the review is already on the Q4 plan", "discounts are reviewed by the deal desk now", "wait for the October report"]);
      const settled =
        outcome === 1 ? { kind: "reject" as const, by: "Maria Jensen (deal desk)", reason } : { kind: "expire" as const, deadline: "2026-11-03T17:00:00.000Z" };
      const output = String(notRunMessage({ id, name: "create_follow_up" }, settled).content);
      call = { id, name: "create_follow_up", args, output, status: "error" };
      b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
      b.turns.push(answerTurn(`Create a follow-up for ${owner} to review ${region} discounts.`, [call], "The follow-up was not created."));
      b.evidence.push({
        id: "outcome",
        source: "tool-result",
        turn: b.turns.length - 1,
        text: outcome === 1 ? reason : "2026-11-03T17:00",
      });
      followUp = `Why wasn't the follow-up for ${owner} created? Who decided, or what happened?`;
    }
    const distance = [0, 4, 9, 20][b.index % 4];
    b.turns.push(...fillerRefs(b.random, fillers, distance));
    return { note: `the outcome of an approval ${distance + 1} turns back (${["approved", "rejected", "expired"][outcome]})`, followUp };
  },

  /** 19. A fact the user stated, then corrected: the correction wins, and the stale fact never comes alone. */
  async "corrected-fact"(_tools, fillers, b) {
    const [before, after] = shuffle(b.random, REGIONS).slice(0, 2);
    const [m1, m2] = shuffle(b.random, ["Lena Novak", "Omar Haddad", "Grace Liu", "Pavel Ivanov", "Sofia Rossi", "Kwame Mensah"]).slice(0, 2);
    const fact = [
      {
        said: `I look after the ${before} region.`,
        stale: `I look after the ${before} region`,
        correction: `Actually I moved to the ${after} region.`,
        evidence: `I moved to the ${after} region`,
        follow: "How is my region doing this month?",
      },
      {
        said: `My manager is ${m1}.`,
        stale: `My manager is ${m1}`,
        correction: `Correction: my manager is now ${m2}.`,
        evidence: `my manager is now ${m2}`,
        follow: "Draft a two-line note to my manager about October.",
      },
      {
        said: "I want amounts in thousands of euros.",
        stale: "amounts in thousands of euros",
        correction: "Actually, show amounts in millions of dollars instead.",
        evidence: "amounts in millions of dollars",
        follow: "Give me revenue by region for September the way I like amounts shown.",
      },
    ][b.index % 3];
    b.turns.push(...fillerRefs(b.random, fillers, int(b.random, 0, 2)));
    b.turns.push(answerTurn(`Before we start: ${fact.said}`, [], "Noted, I'll keep that in mind."));
    b.turns.push(...fillerRefs(b.random, fillers, [1, 4, 10, 30][b.index % 4]));
    b.turns.push(answerTurn(fact.correction, [], "Thanks, noted."));
    b.evidence.push({ id: "correction", source: "user", turn: b.turns.length - 1, text: fact.evidence, supersedes: fact.stale });
    const distance = [1, 3, 8, 20, 45][b.index % 5];
    b.turns.push(...fillerRefs(b.random, fillers, distance));
    return { note: `a fact the user corrected ${distance + 1} turns back`, followUp: fact.follow };
  },
};

/** The text of a turn, part by part, to check each evidence unit is where the case says. */
function sourceText(c: SufficiencyCase, fillers: Fillers, e: Evidence): string {
  const steps = e.turn === "active" ? c.activeSteps : (resolveTurn(c.turns[e.turn], fillers).steps ?? []);
  if (e.source === "tool-result")
    return steps
      .flat()
      .map((s) => s.output)
      .join("\n");
  if (e.source === "parameters")
    return steps
      .flat()
      .map((s) => JSON.stringify(s.args))
      .join("\n");
  const turn = resolveTurn(c.turns[e.turn as number], fillers);
  return e.source === "answer" ? turn.answer : turn.question;
}

export function resolveTurn(turn: TurnSpec | FillerRef, fillers: Fillers): TurnSpec {
  if ("filler" in turn) {
    const filler = fillers[turn.filler];
    if (!filler) throw new Error(`unknown filler ${turn.filler}`);
    return filler;
  }
  return turn;
}

async function main() {
  const options = { seed: { type: "string", default: "29" } } as const;
  const { values } = parseCliArgs(optionsUsage("bench:sufficiency:generate", options), { options });
  const random = prng(Number(values.seed));
  const tools = await startTools();
  try {
    const fillers = await buildFillers(tools, random);
    await mkdir(CASES_DIR, { recursive: true });
    await writeFile(join(CASES_DIR, "fillers.json"), `${JSON.stringify(fillers, null, 2)}\n`);
    let total = 0;
    for (const kind of CASE_KINDS) {
      const lines: string[] = [];
      for (let index = 0; index < casesOf(kind); index++) {
        const b: Builder = { kind, index, random, turns: [], evidence: [] };
        const built = await KINDS[kind](tools, fillers, b);
        const c = caseSchema.parse({
          id: `${kind}-${String(index + 1).padStart(3, "0")}`,
          kind,
          note: built.note,
          turns: b.turns,
          followUp: built.followUp,
          activeSteps: built.activeSteps ?? [],
          evidence: b.evidence,
        });
        for (const e of c.evidence) {
          if (!evidenceIn(e, sourceText(c, fillers, e))) throw new Error(`${c.id}: evidence ${e.id} is not in its source`);
          if (evidenceIn(e, c.followUp)) throw new Error(`${c.id}: evidence ${e.id} is in the follow-up itself`);
        }
        lines.push(JSON.stringify(c));
      }
      await writeFile(join(CASES_DIR, `${kind}.jsonl`), `${lines.join("\n")}\n`);
      total += lines.length;
    }
    console.log(`wrote ${total} cases and ${Object.keys(fillers).length} filler turns to bench/sufficiency/cases/`);
  } finally {
    await tools.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
