import { ChatBedrockConverse } from "@langchain/aws";
import { AIMessage, HumanMessage, RemoveMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { BSON, type CommandStartedEvent, type CommandSucceededEvent, type Db, type MongoClient } from "mongodb";
import type { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import type { ConverseEndpoint, Responder } from "../../support/converse-endpoint.js";
import { SAVER_COLLECTIONS } from "./saver-support.js";

export const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";

/** The scripted model: a tool call for a question, an answer once the tool's result is in. */
export const toolThenAnswer: Responder = (request, { requestNumber }) =>
  request.messages.at(-1)?.content.some((b) => "toolResult" in b)
    ? { text: `Answer number ${requestNumber}: it is sunny.` }
    : { toolUses: [{ name: "weather", input: { city: "Oslo" } }] };

export interface TurnGraphOptions {
  /** Characters of each tool result. Default: 2,000. */
  toolOutput?: number;
  /**
   * Messages kept in the `messages` channel: once the list is longer by `every` messages, the
   * oldest are removed (`RemoveMessage`), as a bounded working set does. Default: none removed.
   */
  window?: { keep: number; every: number };
}

/**
 * The product's shape of graph on `MessagesAnnotation`: the real `ChatBedrockConverse` (pointed at
 * the local Converse endpoint by the caller's environment) calls a tool, the tool answers with a
 * status and an artifact, the model answers.
 */
export function turnGraph(checkpointer: ThreadwiseSaver, options: TurnGraphOptions = {}) {
  const model = new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 256 }).bindTools([
    { name: "weather", description: "Weather of a city", schema: { type: "object", properties: { city: { type: "string" } } } },
  ]);
  const lastOf = (messages: BaseMessage[]) => messages[messages.length - 1];
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async ({ messages }) => {
      const reply = await model.invoke(messages.filter((m) => !(m instanceof RemoveMessage)));
      const window = options.window;
      if (window === undefined || (AIMessage.isInstance(reply) && (reply.tool_calls?.length ?? 0) > 0) || messages.length < window.keep + window.every) {
        return { messages: [reply] };
      }
      // Drop the oldest whole turns: from the first question that leaves at most `keep` messages.
      const from = messages.findIndex((m, i) => i >= messages.length - window.keep && HumanMessage.isInstance(m));
      const removed = messages.slice(0, from).map((m) => new RemoveMessage({ id: m.id as string }));
      return { messages: [...removed, reply] };
    })
    .addNode("tools", ({ messages }) => {
      const call = (lastOf(messages) as AIMessage).tool_calls?.[0];
      return {
        messages: [
          new ToolMessage({ content: "r".repeat(options.toolOutput ?? 2_000), tool_call_id: call?.id ?? "", status: "success", artifact: { rows: 3 } }),
        ],
      };
    })
    .addEdge(START, "agent")
    .addConditionalEdges("agent", ({ messages }) => ((lastOf(messages) as AIMessage).tool_calls?.length ? "tools" : END))
    .addEdge("tools", "agent")
    .compile({ checkpointer });
}

/** Runs `run` with the AWS SDK pointed at the endpoint. */
export async function withEndpoint<T>(endpoint: ConverseEndpoint, run: () => Promise<T>): Promise<T> {
  const saved = Object.keys(endpoint.environment).map((name) => [name, process.env[name]] as const);
  Object.assign(process.env, endpoint.environment);
  try {
    return await run();
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

/** One turn as the product runs it: a new fence epoch, the graph run under it, then prune under it. */
export async function runTurn(saver: ThreadwiseSaver, graph: ReturnType<typeof turnGraph>, threadId: string, turn: number): Promise<void> {
  await saver.claimThread(threadId, turn);
  await graph.invoke({ messages: [new HumanMessage(`Question ${turn}: weather in Oslo?`)] }, { configurable: { thread_id: threadId, fence_epoch: turn } });
  await saver.prune(threadId, { fenceEpoch: turn });
}

/** Database round trips, documents returned and reply bytes, counted from the driver's command monitoring events. */
export class CommandCounter {
  roundTrips = 0;
  documents = 0;
  replyBytes = 0;
  private readonly listeners: [string, (event: never) => void][];

  constructor(private readonly client: MongoClient) {
    const started = (event: CommandStartedEvent) => {
      if (event.commandName !== "endSessions") this.roundTrips += 1;
    };
    const succeeded = (event: CommandSucceededEvent) => {
      const reply = event.reply as { cursor?: { firstBatch?: unknown[]; nextBatch?: unknown[] } } | undefined;
      const batch = reply?.cursor?.firstBatch ?? reply?.cursor?.nextBatch;
      if (batch !== undefined) this.documents += batch.length;
      if (reply !== undefined) this.replyBytes += BSON.calculateObjectSize(reply as BSON.Document);
    };
    this.listeners = [
      ["commandStarted", started as (event: never) => void],
      ["commandSucceeded", succeeded as (event: never) => void],
    ];
    for (const [name, listener] of this.listeners) client.on(name as "commandStarted", listener);
  }

  /** Counts during `run`. */
  async measure(run: () => Promise<unknown>): Promise<{ roundTrips: number; documents: number; replyBytes: number }> {
    const before = { roundTrips: this.roundTrips, documents: this.documents, replyBytes: this.replyBytes };
    await run();
    return { roundTrips: this.roundTrips - before.roundTrips, documents: this.documents - before.documents, replyBytes: this.replyBytes - before.replyBytes };
  }

  close(): void {
    for (const [name, listener] of this.listeners) this.client.off(name as "commandStarted", listener);
  }
}

/** BSON bytes of the thread's documents in every collection the saver writes, and the largest one. */
export async function threadBytes(db: Db, threadId: string): Promise<{ total: number; largest: number }> {
  let total = 0;
  let largest = 0;
  for (const name of SAVER_COLLECTIONS) {
    const filter = name === "checkpoint_threads" ? { _id: threadId as never } : { thread_id: threadId };
    for (const doc of await db.collection(name).find(filter).toArray()) {
      const size = BSON.calculateObjectSize(doc);
      total += size;
      largest = Math.max(largest, size);
    }
  }
  return { total, largest };
}
