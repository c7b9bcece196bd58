/**
 * Runs the suite's follow-ups through a real model and scores the answers against the evidence.
 * Each case's view is the product's (`buildModelView`, the product's policy), sent through
 * `ChatBedrockConverse` with the tools that reach what the view left out (`search_conversation`,
 * `read_tool_output` on the case's conversation in the stores) and the sample `sql_query`; the
 * model's tool calls are run and the view rebuilt, as the graph does, up to `MAX_STEPS` calls. An
 * evidence unit counts as used when the answer, or the arguments of a tool call the model made,
 * state it (`usedTerms`: a query parameter by its value). A case is answered when every unit is used.
 *
 *   npm run eval -- --model <bedrock model id> [--region us-east-1] [--per-kind 3] [--kind user-fact]
 *
 * It needs AWS credentials that may call the model on Bedrock; without them it stops at once and says so.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { ChatBedrockConverse } from "@langchain/aws";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { MongoClient } from "mongodb";
import { DEFAULT_VIEW_FINISHED_TURNS, DEFAULT_VIEW_HISTORY_BLOCK_TURNS } from "../../lib/config/view-config.js";
import { optionsUsage, parseCliArgs } from "../../lib/local/cli-args.js";
import { startEmbeddedMongo } from "../../lib/local/embedded-mongo.js";
import { DEFAULT_PARAMETER_LEDGER, DEFAULT_TURN_DIGEST, messageText } from "../../lib/model-view/index.js";
import { ConversationSearch } from "../../lib/recall/conversation-search.js";
import { createSearchConversationTool } from "../../lib/recall/search-conversation-tool.js";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { createReadToolOutputTool } from "../../lib/tools/read-tool-output.js";
import { buildSalesDatabase, SALES_SCHEMA_DESCRIPTION } from "../../lib/tools/sql/sales-dataset.js";
import { createSqlQueryTool } from "../../lib/tools/sql/sql-query-tool.js";
import { SqliteQueryEngine } from "../../lib/tools/sql/sqlite-query-engine.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { CASE_KINDS, type Evidence } from "./case-schema.js";
import { evidenceIn } from "./evidence.js";
import { threadwisePolicy, threadwiseView } from "./policies.js";
import { loadCase, loadSuite, MemoryRecallIndex, SUITE_OWNER, type LoadedCase } from "./suite.js";

/** Model calls per case before it counts as unanswered. */
export const MAX_STEPS = 4;

/** What states an evidence unit in an answer: a query parameter (`segment = 'SMB'`) by its value, else its text or alternatives. */
export function usedTerms(e: Evidence): string[] {
  const literal = /=\s*'([^']+)'/.exec(e.text)?.[1];
  return [literal ?? e.text, ...(e.alternatives ?? [])];
}

export interface EvalScore {
  caseId: string;
  answered: boolean;
  units: { id: string; used: boolean }[];
  steps: number;
  toolCalls: string[];
}

/** Scores a case's final answer and the tool calls the model made against the case's evidence. */
export function scoreAnswer(loaded: LoadedCase, answer: string, toolCallArgs: readonly string[]): EvalScore["units"] {
  const said = [answer, ...toolCallArgs].join("\n");
  return loaded.case.evidence.map((e) => ({ id: e.id, used: usedTerms(e).some((term) => evidenceIn({ ...e, text: term, alternatives: [] }, said)) }));
}

export interface EvalDeps {
  model: BaseChatModel;
  registry: ToolRegistry;
}

/** Runs one case's follow-up to a final answer (or `MAX_STEPS` calls) and scores it. */
export async function evaluateCase(loaded: LoadedCase, deps: EvalDeps): Promise<EvalScore> {
  const policy = threadwisePolicy({ turnDigest: DEFAULT_TURN_DIGEST, parameterLedger: DEFAULT_PARAMETER_LEDGER });
  const caller = { principal: SUITE_OWNER, roles: [] };
  const model = deps.model.bindTools ? deps.model.bindTools(deps.registry.toolSpecs(caller)) : deps.model;
  let thread: BaseMessage[] = [...loaded.thread];
  const toolCalls: string[] = [];
  const toolCallArgs: string[] = [];
  for (let step = 1; step <= MAX_STEPS; step++) {
    const reply = (await model.invoke(threadwiseView(thread, policy))) as AIMessage;
    const calls = reply.tool_calls ?? [];
    if (calls.length === 0) {
      const units = scoreAnswer(loaded, messageText(reply.content), toolCallArgs);
      return { caseId: loaded.case.id, answered: units.every((u) => u.used), units, steps: step, toolCalls };
    }
    const results: ToolMessage[] = [];
    for (const call of calls) {
      const id = call.id ?? `call-${step}-${results.length}`;
      toolCalls.push(call.name);
      toolCallArgs.push(JSON.stringify(call.args));
      const result = await deps.registry.execute(
        { id, name: call.name, args: call.args },
        { conversationId: loaded.conversationId, turnId: `${loaded.case.id}-eval`, caller },
      );
      results.push(new ToolMessage({ content: result.content, tool_call_id: id, name: call.name, status: result.status }));
    }
    thread = [...thread, new AIMessage({ content: reply.content, tool_calls: calls }), ...results];
  }
  const units = scoreAnswer(loaded, "", toolCallArgs);
  return { caseId: loaded.case.id, answered: false, units, steps: MAX_STEPS, toolCalls };
}

/** Raised when the model cannot be called with the credentials at hand; the message says what to do. */
export class EvalNotRunnableError extends Error {
  override name = "EvalNotRunnableError";
}

/** Resolves the AWS SDK's default credentials, or says clearly that there are none. */
export async function checkCredentials(client: BedrockRuntimeClient): Promise<void> {
  try {
    await client.config.credentials();
  } catch (error) {
    throw new EvalNotRunnableError(
      `npm run eval needs AWS credentials allowed to call bedrock:InvokeModel (the AWS SDK's default chain: environment, profile, SSO or ` +
        `role); none were found (${error instanceof Error ? error.name : "error"}). Nothing was run.`,
      { cause: error },
    );
  }
}

async function main() {
  const options = {
    model: { type: "string", default: "" },
    region: { type: "string", default: process.env.AWS_REGION ?? "us-east-1" },
    "per-kind": { type: "string", default: "3" },
    kind: { type: "string", default: "" },
  } as const;
  const { values } = parseCliArgs(optionsUsage("eval", options), { options });
  if (!values.model) throw new EvalNotRunnableError("npm run eval -- --model <bedrock model id>: the model to evaluate is required.");
  const client = new BedrockRuntimeClient({ region: values.region });
  await checkCredentials(client);
  const model = new ChatBedrockConverse({ model: values.model, region: values.region, client, temperature: 0, maxTokens: 1_024 });

  const suite = await loadSuite();
  const perKind = Number(values["per-kind"]);
  const cases = CASE_KINDS.filter((k) => !values.kind || k === values.kind).flatMap((kind) => suite.cases.filter((c) => c.kind === kind).slice(0, perKind));
  const mongo = await startEmbeddedMongo();
  const mongoClient = new MongoClient(mongo.uri);
  await mongoClient.connect();
  const engine = new SqliteQueryEngine({ image: () => buildSalesDatabase(), schemaDescription: SALES_SCHEMA_DESCRIPTION });
  try {
    const database = new ThreadwiseDatabase(mongoClient, { dbName: `eval_sufficiency_${randomUUID().slice(0, 8)}` });
    await database.setup();
    const recall = new MemoryRecallIndex();
    const registry = new ToolRegistry([
      createSqlQueryTool({ engine }),
      createSearchConversationTool({
        search: new ConversationSearch({ index: recall }),
        view: { finishedTurns: DEFAULT_VIEW_FINISHED_TURNS, historyBlockTurns: DEFAULT_VIEW_HISTORY_BLOCK_TURNS },
      }),
      createReadToolOutputTool(database.artifacts),
    ]);
    let answered = 0;
    for (const c of cases) {
      const score = await evaluateCase(await loadCase(database, c, suite.fillers, recall), { model, registry });
      if (score.answered) answered++;
      console.log(
        `${score.caseId}: ${score.answered ? "answered" : "not answered"} (${score.steps} calls; ` +
          `${score.units.map((u) => `${u.id} ${u.used ? "used" : "not used"}`).join(", ")})`,
      );
    }
    console.log(`\n${answered} of ${cases.length} follow-ups answered with their evidence by ${values.model}`);
  } finally {
    await engine.close();
    await mongoClient.close();
    await mongo.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error instanceof EvalNotRunnableError ? error.message : error);
    process.exitCode = 1;
  });
}
