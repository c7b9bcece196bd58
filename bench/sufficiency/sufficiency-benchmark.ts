/**
 * Context-sufficiency benchmark (issue 29): every policy of `policies.ts` on every case of the suite
 * (`bench/sufficiency/cases/`), in one run. For each case and policy it measures whether the
 * follow-up's evidence is in the view, one tool call away, or missing (`measure.ts`), and the view's
 * tokens. Prints, per kind, the four classes (in view, by handle, cued search, uncued search), missing and median tokens per policy at its default
 * setting; over the whole suite, each policy at several settings (the chart). Offloaded outputs are
 * stored and read in the real artifact store on the embedded MongoDB server; finished turns are
 * indexed in memory (`MemoryRecallIndex`) unless `--recall mongodb` indexes them in `RecallIndexStore`.
 *
 *   npm run bench:sufficiency [-- --write]   (--write updates bench/results/sufficiency.md and sufficiency.svg)
 *   npm run bench:sufficiency -- --policy threadwise,"full replay"   (only the policies whose name contains one of them)
 *   npm run bench:sufficiency -- --recall mongodb [--kind user-fact]   (turns indexed in the embedded MongoDB server; slow for the 150-turn cases)
 *   npm run bench:sufficiency -- --encryption on [--recall mongodb]   (the cases' contents stored encrypted, local key files: offloaded
 *     outputs sealed and opened by `read_tool_output`; with `--recall mongodb`, the index's terms as keyed hashes; in clear by default)
 */
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { optionsUsage, parseCliArgs } from "../../lib/local/cli-args.js";
import { startEmbeddedMongo } from "../../lib/local/embedded-mongo.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { ConversationSearch } from "../../lib/recall/conversation-search.js";
import type { ThreadwiseDatabase } from "../../lib/store/database.js";
import { lineChart, panelInRow, type LineSeries } from "../support/line-chart.js";
import { formatCount, markdownTable } from "../support/markdown.js";
import { writeResults } from "../support/results.js";
import { median } from "../support/statistics.js";
import { CASE_KINDS, ISSUE_46_KINDS } from "./case-schema.js";
import { measureCase, REACH_CLASSES, type CaseMeasure, type Reached } from "./measure.js";
import { POLICY_FAMILIES } from "./policy-families.js";
import { loadCase, loadSuite, MemoryRecallIndex, SuiteDatabases, type LoadedCase } from "./suite.js";

const pct = (n: number, of: number) => (of === 0 ? "–" : `${((100 * n) / of).toFixed(1)} %`);

interface Row {
  family: string;
  setting: string;
  isDefault: boolean;
  measures: CaseMeasure[];
}

function summary(measures: readonly CaseMeasure[]) {
  const n = measures.length;
  const count = (c: Reached) => measures.filter((m) => m.reached === c).length;
  const [inView, handle, cued, uncued, missing] = REACH_CLASSES.map(count);
  return {
    n,
    inView,
    handle,
    cued,
    uncued,
    missing,
    stale: measures.filter((m) => m.stale).length,
    sufficient: (inView + handle + cued) / n,
    tokens: median(measures.map((m) => m.tokens)),
  };
}

/** The four classes, missing and stale, as table cells. */
const classCells = (s: ReturnType<typeof summary>) => [
  pct(s.inView, s.n),
  pct(s.handle, s.n),
  pct(s.cued, s.n),
  pct(s.inView + s.handle + s.cued, s.n),
  pct(s.uncued, s.n),
  pct(s.missing, s.n),
  String(s.stale),
];
const CLASS_HEADERS = ["in view", "by handle", "cued search", "sufficient", "uncued search", "missing", "stale"];

/** Legend labels short enough for one row. */
const SHORT_NAMES: Record<string, string> = {
  "Threadwise before issue 29": "TW before #29",
  "LangChain trimMessages": "LC trim",
  "LangChain ClearToolUsesEdit": "LC clear",
  "Strands sliding window": "Strands",
  "OpenAI ToolOutputTrimmer": "OpenAI trim",
  "Deep Agents eviction": "Deep Agents",
};

function chart(rows: readonly Row[]): string {
  const colors = ["#222", "#8c564b", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#d62728", "#17becf", "#e377c2"];
  const families = [...new Set(rows.map((r) => r.family))];
  const series: LineSeries[] = families.map((family, i) => ({
    color: colors[i % colors.length],
    markers: true,
    points: rows
      .filter((r) => r.family === family)
      .map((r) => ({ x: Math.max(100, summary(r.measures).tokens), y: 100 * summary(r.measures).sufficient }))
      .sort((a, b) => a.x - b.x),
  }));
  const width = 1_100;
  const height = 520;
  return lineChart({
    width,
    height,
    title: "Context sufficiency (in view, by handle or cued search) against median view tokens, 417 cases",
    panels: [
      {
        ...panelInRow(0, width, height - 60, { left: 70, right: 30, top: 40, bottom: 50 }),
        x: {
          scale: "log",
          min: 300,
          max: 300_000,
          ticks: [300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000].map((v) => ({ value: v, label: formatCount(v) })),
          title: "median tokens of the view (cl100k)",
        },
        y: { min: 0, max: 100, ticks: [0, 20, 40, 60, 80, 100].map((v) => ({ value: v, label: `${v} %` })), title: "cases sufficient" },
        series,
      },
    ],
    legend: {
      x: 20,
      y: height - 30,
      spacing: 120,
      entries: families.map((label, i) => ({ label: SHORT_NAMES[label] ?? label, color: colors[i % colors.length] })),
    },
  });
}

async function main() {
  const options = {
    write: { type: "boolean", default: false },
    policy: { type: "string", default: "" },
    recall: { type: "string", default: "memory" },
    kind: { type: "string", default: "" },
    encryption: { type: "string", default: "off" },
  } as const;
  const { values } = parseCliArgs(optionsUsage("bench:sufficiency", options), { options });
  const suite = await loadSuite();
  const mongo = await startEmbeddedMongo();
  const client = new MongoClient(mongo.uri);
  await client.connect();
  try {
    const began = performance.now();
    const loaded: LoadedCase[] = [];
    if (values.recall !== "mongodb" && values.recall !== "memory") throw new Error("--recall is mongodb or memory");
    const memory = values.recall === "memory" ? new MemoryRecallIndex() : undefined;
    if (values.encryption !== "on" && values.encryption !== "off") throw new Error("--encryption is on or off");
    const contentKeys = values.encryption === "on" ? new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-bench-sufficiency-keys-"))) : undefined;
    const databases = new SuiteDatabases(client, `bench_sufficiency_${randomUUID().slice(0, 8)}`, memory ? undefined : Number.POSITIVE_INFINITY, contentKeys);
    const cases = suite.cases.filter((c) => !values.kind || c.kind === values.kind);
    let database: ThreadwiseDatabase | undefined;
    for (const c of cases) loaded.push(await loadCase((database = await databases.next()), c, suite.fillers, memory));
    console.log(`loaded ${loaded.length} cases into the stores in ${((performance.now() - began) / 1000).toFixed(1)} s`);
    const deps = { search: new ConversationSearch({ index: memory ?? (database as ThreadwiseDatabase).recall }) };
    const rows: Row[] = [];
    for (const family of POLICY_FAMILIES) {
      const wanted = values.policy
        .toLowerCase()
        .split(",")
        .filter((w) => w.length > 0);
      if (wanted.length > 0 && !wanted.some((w) => family.name.toLowerCase().includes(w))) continue;
      for (const policy of family.settings) {
        const measures: CaseMeasure[] = [];
        for (const c of loaded) measures.push(await measureCase(c, policy, deps));
        rows.push({ family: family.name, setting: policy.setting, isDefault: policy.isDefault, measures });
        const s = summary(measures);
        console.log(
          `${family.name} (${policy.setting}): ${pct(s.inView + s.handle + s.cued, s.n)} sufficient (${pct(s.inView, s.n)} in view, ` +
            `${pct(s.handle, s.n)} by handle, ${pct(s.cued, s.n)} cued search), ${pct(s.uncued, s.n)} uncued search, ${pct(s.missing, s.n)} missing, ` +
            `${s.stale} stale, median ${formatCount(s.tokens)} tokens`,
        );
      }
    }

    const defaults = rows.filter((r) => r.isDefault);
    const overall = markdownTable(
      ["policy", "setting", ...CLASS_HEADERS, "median tokens", "tokens at 50 turns vs full replay"],
      defaults.map((r) => {
        const s = summary(r.measures);
        const at50 = (rs: readonly CaseMeasure[]) => median(rs.filter((m) => m.finishedTurns >= 45 && m.finishedTurns <= 60).map((m) => m.tokens));
        const replay = rows.find((x) => x.family === "full replay");
        return [r.family, r.setting, ...classCells(s), formatCount(s.tokens), replay ? pct(at50(r.measures), at50(replay.measures)) : "–"];
      }),
      ["left", "left", ...CLASS_HEADERS.map(() => "right" as const), "right", "right"],
    );
    const replayRow = rows.find((x) => x.family === "full replay");
    for (const r of defaults) {
      // The 50-turn share unrounded, to compare changes smaller than the table's 0.1 point.
      const at50 = (rs: readonly CaseMeasure[]) => median(rs.filter((m) => m.finishedTurns >= 45 && m.finishedTurns <= 60).map((m) => m.tokens));
      if (replayRow)
        console.log(
          `${r.family}: at 50 turns ${at50(r.measures)} tokens, ${((100 * at50(r.measures)) / at50(replayRow.measures)).toFixed(2)} % of full replay`,
        );
    }
    const perKind = CASE_KINDS.map((kind) => {
      const table = markdownTable(
        ["policy", ...CLASS_HEADERS, "median tokens"],
        defaults.map((r) => {
          const s = summary(r.measures.filter((m) => m.kind === kind));
          return [r.family, ...classCells(s), formatCount(s.tokens)];
        }),
        ["left", ...CLASS_HEADERS.map(() => "right" as const), "right"],
      );
      return `### ${kind}\n\n${table}`;
    }).join("\n\n");
    const parts = markdownTable(
      ["policy", "cases", ...CLASS_HEADERS, "median tokens"],
      defaults.flatMap((r) =>
        (
          [
            ["the first 300 (issue 29)", (m: CaseMeasure) => !ISSUE_46_KINDS.includes(m.kind)],
            ["issue 46's", (m: CaseMeasure) => ISSUE_46_KINDS.includes(m.kind)],
          ] as const
        ).map(([label, keep]) => {
          const s = summary(r.measures.filter(keep));
          return [r.family, `${label} (${s.n})`, ...classCells(s), formatCount(s.tokens)];
        }),
      ),
      ["left", "left", ...CLASS_HEADERS.map(() => "right" as const), "right"],
    );
    const settings = markdownTable(
      ["policy", "setting", "sufficient", "in view", "uncued search", "missing", "median tokens"],
      rows.map((r) => {
        const s = summary(r.measures);
        return [
          r.family,
          r.setting,
          pct(s.inView + s.handle + s.cued, s.n),
          pct(s.inView, s.n),
          pct(s.uncued, s.n),
          pct(s.missing, s.n),
          formatCount(s.tokens),
        ];
      }),
      ["left", "left", "right", "right", "right"],
    );
    const threadwise = defaults.find((r) => r.family === "Threadwise");
    const misses = threadwise
      ? threadwise.measures
          .filter((m) => m.reached === "missing" || m.reached === "uncued-search" || m.stale)
          .map(
            (m) =>
              `- \`${m.caseId}\` (${m.reached}${m.stale ? ", stale" : ""}): ${m.units
                .filter((u) => u.reached === "missing" || u.reached === "uncued-search")
                .map((u) => u.id)
                .join(", ")}`,
          )
          .join("\n")
      : "";
    const lucky = threadwise
      ? threadwise.measures
          .filter((m) => m.reached === "in-view" && m.units.some((u) => u.byLuck))
          .map(
            (m) =>
              `- \`${m.caseId}\`: ${m.units
                .filter((u) => u.byLuck)
                .map((u) => u.id)
                .join(", ")}`,
          )
          .join("\n")
      : "";
    const report = [
      "# Context sufficiency",
      "",
      `\`npm run bench:sufficiency -- --write\`: ${loaded.length} cases of \`bench/sufficiency/cases/\` (${CASE_KINDS.length} kinds), every ` +
        `policy at its default setting. Each evidence unit is *in view*; else reached *by handle*, one \`read_tool_output\` (or Deep ` +
        `Agents' \`read_file\`) on a handle the view names; else by one \`search_conversation\` with the follow-up as its query, *cued* ` +
        `when the view's out-of-sight notice or a ledger names the subject (a term the follow-up shares with the unit's turn), *uncued* ` +
        `otherwise; else *missing*. A case is as good as its worst unit; *sufficient* is the first three classes. *Stale*: cases whose ` +
        `view or search shows a corrected fact without its correction. The tools run against the case's conversation in the real stores. ` +
        `Tokens: cl100k, the product's counter. See [docs/sufficiency.md](../../docs/sufficiency.md).`,
      "",
      overall,
      "",
      "## The first 300 cases and issue 46's 117",
      "",
      "Issue 46's kinds were written before the policy changed for them, and kept unchanged after.",
      "",
      parts,
      "",
      "## Per kind",
      "",
      perKind,
      "",
      "## Every setting (the chart)",
      "",
      "![sufficiency against tokens](sufficiency.svg)",
      "",
      settings,
      "",
      "## Where Threadwise is not sufficient (uncued search or missing) or stale",
      "",
      misses || "- nowhere",
      "",
      "## Where Threadwise is in view only by luck",
      "",
      "Cases in view with a unit the view holds only through another turn's text, not from its source turn " +
        "(its pair, or its line of the ledger of time anchors): `directFromSource` in `bench/sufficiency/measure.ts`.",
      "",
      lucky || "- nowhere",
      "",
    ].join("\n");
    console.log(`\n${report}`);
    if (values.write) await writeResults({ "sufficiency.md": report, "sufficiency.svg": chart(rows) });
  } finally {
    await client.close();
    await mongo.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
