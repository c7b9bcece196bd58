// Bundled by test/infra/bundling.test.ts with the stack's bundle options and compared with the
// same module run from source: each function goes through code the bundles replace (the tracing
// client behind RunTree, the LangChain import map, zod's locales and compiler, the tokenizer ranks,
// the chat model taken from @langchain/aws's chat module, the MongoDB driver's GridFS), loads the AWS SDK with require(), or
// loads SQLite's WebAssembly package and the handbook from files beside the bundle.
import { getContextVariable, setContextVariable } from "@langchain/core/context";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatPromptValue } from "@langchain/core/prompt_values";
import { RunnableLambda } from "@langchain/core/runnables";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { GridFSBucket, MongoClient } from "mongodb";
import { z } from "zod";
import { FieldCipher } from "../../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../../lib/crypto/local-tenant-keys.js";
import { ZodJsonSchemaValidator } from "../../../lib/mcp/zod-json-schema-validator.js";
import { createChatModel } from "../../../lib/agent/chat-model.js";
import { LocalChatModel } from "../../../lib/agent/local-chat-model.js";
import { countTextTokens } from "../../../lib/model-view/token-counter.js";
import { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";
import { buildSalesDatabase, SALES_SCHEMA_DESCRIPTION } from "../../../lib/tools/sql/sales-dataset.js";
import { SqliteQueryEngine } from "../../../lib/tools/sql/sqlite-query-engine.js";
import { sqliteModuleUrl } from "../../../lib/tools/sql/sqlite-wasm.js";

export { countTextTokens };

const describeMessage = (m: BaseMessage) => ({ type: m.getType(), content: m.content, toolCalls: (m as AIMessage).tool_calls ?? [] });

/** Turns through a checkpointed graph with the offline model; the state comes back through the serializer. */
export async function runTurns(contents: string[]): Promise<unknown[]> {
  const model = new LocalChatModel();
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: "probe" } };
  for (const content of contents) await graph.invoke({ messages: [new HumanMessage(content)] }, config);
  return ((await graph.getState(config)).values.messages as BaseMessage[]).map(describeMessage);
}

/** The LangChain data classes a checkpoint holds, through the checkpoint serializer and back (class instances, or `getType` throws). */
export async function roundTrip(): Promise<unknown> {
  const serde = new JsonPlusSerializer();
  const value = {
    messages: [
      new SystemMessage("rules"),
      new HumanMessage({ content: "hi", id: "h1" }),
      new AIMessage({ content: "", tool_calls: [{ id: "c1", name: "run_sql", args: { sql: "select 1" } }] }),
      new ToolMessage({ content: "1", tool_call_id: "c1" }),
    ],
    prompt: new ChatPromptValue([new HumanMessage("prompted")]),
  };
  const [type, bytes] = await serde.dumpsTyped(value);
  const back = (await serde.loadsTyped(type, bytes)) as typeof value;
  return { messages: back.messages.map(describeMessage), prompt: back.prompt instanceof ChatPromptValue ? back.prompt.toString() : "not a ChatPromptValue" };
}

/** A context variable set in one runnable and read in a nested one (carried by RunTree). */
export async function contextVariable(): Promise<unknown> {
  const inner = RunnableLambda.from(() => getContextVariable("probe"));
  const outer = RunnableLambda.from(async () => {
    setContextVariable("probe", "carried");
    return inner.invoke({});
  });
  return outer.invoke({});
}

/** zod's messages for invalid input, plain and through `z.compile`. */
export function zodMessages(): unknown {
  const schema = z.object({ name: z.string(), age: z.number().int().min(0) });
  const input = { name: 3, age: -1.5 };
  const issues = (result: z.ZodSafeParseResult<unknown>) => (result.success ? [] : result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`));
  return {
    plain: issues(schema.safeParse(input)),
    compiled: issues(z.compile(schema).safeParse(input)),
    valid: z.compile(schema).parse({ name: "a", age: 1 }),
  };
}

/** One answer from Bedrock's Converse API (a local endpoint when AWS_ENDPOINT_URL_BEDROCK_RUNTIME points at one). */
export async function bedrockAnswer(question: string): Promise<unknown> {
  const model = createChatModel({ provider: "bedrock", bedrockModelId: "anthropic.claude-sonnet-4-20250514-v1:0", region: "us-east-1", maxOutputTokens: 256 });
  const answer = await model.invoke([new HumanMessage(question)]);
  return { type: answer.getType(), content: answer.content };
}

/** The sample SQL and document tools as a dev stage that keeps them runs them: a query in a worker, a handbook search. */
export async function sampleTools(): Promise<{ sqlite: string; rows: unknown[][]; source?: string }> {
  const engine = new SqliteQueryEngine({ image: () => buildSalesDatabase(), schemaDescription: SALES_SCHEMA_DESCRIPTION });
  const index = new LocalDocumentIndex();
  try {
    const result = await engine.query("SELECT region, round(sum(revenue)) FROM sales WHERE month = '2026-10' GROUP BY region ORDER BY region", {
      maxRows: 10,
      timeoutMs: 10_000,
    });
    const [passage] = await index.search("who approves a discount above 15%", 1, { audience: { tenant: null, groups: [] } });
    return { sqlite: sqliteModuleUrl(), rows: result.rows, source: passage?.source };
  } finally {
    await engine.close();
    await index.close();
  }
}

/** The driver's client as the stores make it (no connection yet), and what a GridFS use meets. */
export async function mongoDriver(): Promise<{ client: boolean; gridFs: string }> {
  const client = new MongoClient("mongodb://127.0.0.1:1/?directConnection=true", { serverSelectionTimeoutMS: 1 });
  let gridFs = "constructed";
  try {
    new GridFSBucket(client.db("probe"));
  } catch (error) {
    gridFs = (error as Error).message;
  }
  await client.close();
  return { client: typeof client.db("probe").collection === "function", gridFs };
}

/** An MCP server with a zod 4 tool, listed and called through the SDK's client: the SDK's zod 3 converter is replaced in the bundles. */
export async function mcpTools(): Promise<unknown> {
  const server = new McpServer({ name: "probe", version: "1.0.0" });
  server.registerTool("echo", { description: "Echoes.", inputSchema: { text: z.string().max(10), n: z.number().int().optional() } }, async ({ text }) => ({
    content: [{ type: "text", text }],
  }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "probe", version: "1.0.0" }, { jsonSchemaValidator: new ZodJsonSchemaValidator() });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  const { tools } = await client.listTools();
  const called = await client.callTool({ name: "echo", arguments: { text: "hi" } });
  const refused = await client.callTool({ name: "echo", arguments: { text: "far too long a text" } });
  await client.close();
  return { schema: tools[0].inputSchema, called: called.content, refused: refused.isError };
}

/** An MCP client as lib/mcp makes one (its own validator), and whether one with the SDK's default (Ajv) can be made at all. */
export function mcpClients(): { withOwnValidator: boolean; defaultValidator: string } {
  const own = new Client({ name: "probe", version: "1.0.0" }, { jsonSchemaValidator: new ZodJsonSchemaValidator() });
  let defaultValidator = "built";
  try {
    new Client({ name: "probe", version: "1.0.0" });
  } catch (error) {
    defaultValidator = error instanceof Error ? error.message : String(error);
  }
  return { withOwnValidator: own instanceof Client, defaultValidator };
}

/** A content field sealed with the AWS Encryption SDK under the tenant's key file in `dir` (base64), as FieldCipher stores it. */
export async function sealContent(dir: string, text: string): Promise<string> {
  const cipher = new FieldCipher({ keys: new LocalTenantKeys(dir), tenantOf: async () => ({ issuer: "api", tenant: "probe" }) });
  const sealed = await cipher.sealText("c1", { collection: "messages", id: "m1", field: "content" }, text);
  return Buffer.from((sealed as { value(): Uint8Array }).value()).toString("base64");
}

/** The text of a field sealed by `sealContent` (by the source or by a bundle). */
export async function openContent(dir: string, sealed: string): Promise<string> {
  const cipher = new FieldCipher({ keys: new LocalTenantKeys(dir), tenantOf: async () => ({ issuer: "api", tenant: "probe" }) });
  const { ciphertextOf } = await import("../../../lib/crypto/content-cipher.js");
  return cipher.openText("c1", { collection: "messages", id: "m1", field: "content" }, ciphertextOf(Buffer.from(sealed, "base64")));
}
