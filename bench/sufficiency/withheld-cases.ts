/**
 * The cost of withholding (issue 43), a separate case class over the frozen suite (its cases are read,
 * never changed): each case's earlier turns are asked by analyst A, whose tools are gated
 * (`sql_query` by the role `analyst`, as `TOOL_ROLES={"sql_query":["analyst"]}` sets it) or read as A
 * (`search_documents`, `query_semantic_model`); the follow-up is asked by viewer B, who has neither.
 * The product's view is built for each (`withholdMessages`, then the view the product sends:
 * `threadwiseView`), and each evidence unit is classed:
 *
 * - expected **answered**: it is in a question or a posted answer (a statement of an answer, a fact
 *   the user stated, a row the answer repeats): B must still see it;
 * - expected **withheld**: it is only in a tool's arguments or output: B must not see it, and the view
 *   must say something is withheld (`[Withheld: …]`).
 *
 * Run: `npm run bench:sufficiency:withheld` (prints the table docs/security.md quotes). A part
 * benchmark: the model view alone, with every output inline (no artifact store, no search).
 */
import { fileURLToPath } from "node:url";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { DataSource } from "../../lib/auth/data-visibility.js";
import { slackPrincipal, type Caller } from "../../lib/auth/principal.js";
import {
  DEFAULT_PARAMETER_LEDGER,
  DEFAULT_STANDING_LEDGER,
  DEFAULT_TURN_DIGEST,
  legacySource,
  messageText,
  PROVENANCE_KEY,
  withholdMessages,
} from "../../lib/model-view/index.js";
import type { Evidence, SufficiencyCase, ToolCallSpec, TurnSpec } from "./case-schema.js";
import { evidenceIn } from "./evidence.js";
import { threadwisePolicy, threadwiseView } from "./policies.js";
import { loadSuite, resolveTurns } from "./suite.js";

const ANALYST: Caller = { principal: slackPrincipal("T0BENCH", "U0ANALYST"), roles: ["analyst"] };
const VIEWER: Caller = { principal: slackPrincipal("T0BENCH", "U0VIEWER"), roles: ["viewer"] };

/** The kinds whose earlier turns ran tools and whose follow-up is answered from them or from what was posted. */
export const WITHHELD_KINDS = ["answer-entity", "result-entity", "carried-parameters", "time-anchor", "several-tools", "user-fact"] as const;
/** Cases taken of each kind, the first ones: a small class beside the frozen suite. */
export const CASES_PER_KIND = 10;

/** What A's call of a tool records as its provenance, as the product's registry would with these settings. */
function sourceOf(tool: string): DataSource {
  if (tool === "sql_query") return { tool, roles: ["analyst"] };
  if (tool === "search_documents" || tool === "query_semantic_model") return { tool, user: ANALYST.principal };
  return { tool };
}

/** A's thread as the graph checkpoints it, each output with its provenance (outputs inline: a part benchmark). */
function threadOf(turns: readonly TurnSpec[], c: SufficiencyCase): BaseMessage[] {
  const messages: BaseMessage[] = [];
  const steps = (list: readonly ToolCallSpec[][], turn: number) => {
    for (const step of list) {
      const calls = step.map((call) => ({ id: `t${turn}-${call.id}`, name: call.name, args: call.args, type: "tool_call" as const }));
      messages.push(new AIMessage({ content: "", tool_calls: calls }));
      for (const [i, call] of step.entries()) {
        messages.push(
          new ToolMessage({
            content: call.output,
            tool_call_id: calls[i].id,
            name: call.name,
            additional_kwargs: { [PROVENANCE_KEY]: [sourceOf(call.name)] },
            ...(call.status && { status: call.status }),
          }),
        );
      }
    }
  };
  for (const [i, turn] of turns.entries()) {
    messages.push(new HumanMessage(turn.question));
    steps(turn.steps, i);
    messages.push(new AIMessage(turn.answer));
  }
  messages.push(new HumanMessage(c.followUp));
  return messages;
}

export type Expected = "answered" | "withheld";

/** Whether B must see the unit: it was posted (a question or an answer) or only a tool fetched it. */
export function expectedFor(evidence: Evidence, turns: readonly TurnSpec[]): Expected {
  const posted = turns.map((t) => `${t.question}\n${t.answer}`).join("\n");
  return evidenceIn(evidence, posted) ? "answered" : "withheld";
}

export interface UnitOutcome {
  caseId: string;
  kind: string;
  expected: Expected;
  /** In A's view (the control). */
  analyst: boolean;
  /** In B's view. */
  viewer: boolean;
  /** B's view says something is withheld. */
  told: boolean;
}

const policy = threadwisePolicy({ turnDigest: DEFAULT_TURN_DIGEST, parameterLedger: DEFAULT_PARAMETER_LEDGER, standingLedger: DEFAULT_STANDING_LEDGER });
const viewText = (messages: readonly BaseMessage[]) =>
  messages.map((m) => `${messageText(m.content)} ${JSON.stringify((m as AIMessage).tool_calls ?? [])}`).join("\n");

/** Every unit of the withheld class, classed for A and for B. */
export async function runWithheldCases(): Promise<UnitOutcome[]> {
  const { cases, fillers } = await loadSuite();
  const outcomes: UnitOutcome[] = [];
  const offered = legacySource(new Set(["search_conversation", "read_tool_output"]));
  for (const kind of WITHHELD_KINDS) {
    for (const c of cases.filter((x) => x.kind === kind).slice(0, CASES_PER_KIND)) {
      const turns = resolveTurns(c, fillers);
      const thread = threadOf(turns, c);
      const forAnalyst = viewText(threadwiseView(withholdMessages(thread, ANALYST, offered).messages, policy));
      const forViewer = viewText(threadwiseView(withholdMessages(thread, VIEWER, offered).messages, policy));
      for (const evidence of c.evidence) {
        outcomes.push({
          caseId: c.id,
          kind,
          expected: expectedFor(evidence, turns),
          analyst: evidenceIn(evidence, forAnalyst),
          viewer: evidenceIn(evidence, forViewer),
          told: forViewer.includes("[Withheld:") || forViewer.includes("[withheld:"),
        });
      }
    }
  }
  return outcomes;
}

const pct = (n: number, d: number) => (d === 0 ? "–" : `${((100 * n) / d).toFixed(1)} %`);

/** The table: per expected class, how many units, in A's view, in B's view, and B's correct share. */
export function withheldTable(outcomes: readonly UnitOutcome[]): string {
  const answered = outcomes.filter((o) => o.expected === "answered");
  const withheld = outcomes.filter((o) => o.expected === "withheld");
  const share = (units: readonly UnitOutcome[], test: (o: UnitOutcome) => boolean) => pct(units.filter(test).length, units.length);
  const rows = [
    "| B (viewer) asks after A (analyst) | units | in A's view | in B's view | correct for B |",
    "|---|---:|---:|---:|---:|",
    `| posted (question or answer): must stay | ${answered.length} | ${share(answered, (o) => o.analyst)} | ` +
      `${share(answered, (o) => o.viewer)} | ${share(answered, (o) => o.viewer === o.analyst)} answered as for A |`,
    `| only in a gated tool's call or output: must be withheld | ${withheld.length} | ${share(withheld, (o) => o.analyst)} | ` +
      `${share(withheld, (o) => o.viewer)} | ${share(withheld, (o) => !o.viewer && o.told)} withheld and told |`,
  ];
  return rows.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outcomes = await runWithheldCases();
  const cases = new Set(outcomes.map((o) => o.caseId)).size;
  console.log(`${cases} cases (${WITHHELD_KINDS.join(", ")}; the first ${CASES_PER_KIND} of each), ${outcomes.length} evidence units\n`);
  console.log(withheldTable(outcomes));
}
