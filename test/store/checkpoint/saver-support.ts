import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import {
  JsonPlusSerializer,
  emptyCheckpoint,
  uuid6,
  type BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointMetadata,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { Db } from "mongodb";
import { ThreadwiseSaver, type ThreadwiseSaverOptions } from "../../../lib/store/threadwise-saver.js";
import type { TestDatabase } from "../../support/mongo.js";

/** The four collections the saver writes, by their default names. */
export const SAVER_COLLECTIONS = ["checkpoints", "checkpoint_writes", "checkpoint_blobs", "checkpoint_threads"] as const;

/** A saver on a database of its own, with its indexes. */
export async function newSaver(
  test: TestDatabase,
  options: Partial<ThreadwiseSaverOptions> = {},
  serde?: SerializerProtocol,
): Promise<{ saver: ThreadwiseSaver; db: Db }> {
  const dbName = `${test.dbName}_${randomUUID().slice(0, 8)}`;
  const saver = new ThreadwiseSaver({ client: test.client, dbName, ...options }, serde);
  expect(await saver.setup()).toEqual([]);
  return { saver, db: test.client.db(dbName) };
}

export async function documents(db: Db, collection: string, threadId?: string) {
  return db
    .collection(collection)
    .find(threadId === undefined ? {} : { thread_id: threadId })
    .toArray();
}

/** Documents of the thread in every collection the saver writes. */
export async function countThreadDocuments(db: Db, threadId: string): Promise<number> {
  const counts = await Promise.all(SAVER_COLLECTIONS.map((name) => db.collection(name).countDocuments({ thread_id: threadId })));
  return counts.reduce((a, b) => a + b, 0);
}

export const loopMetadata: CheckpointMetadata = { source: "loop", step: 0, parents: {} };

export function checkpointWith(values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
}

const serde = new JsonPlusSerializer();

/**
 * Every checkpoint of the thread (all namespaces) as the serializer writes it, by id: two
 * snapshots are equal when every checkpoint reads back byte-identical.
 */
export async function snapshotThread(saver: BaseCheckpointSaver, threadId: string): Promise<Map<string, string>> {
  const snapshot = new Map<string, string>();
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    const [, bytes] = await serde.dumpsTyped({ ...tuple, checkpoint: tuple.checkpoint });
    snapshot.set(`${tuple.config.configurable?.checkpoint_ns}|${tuple.checkpoint.id}`, new TextDecoder().decode(bytes));
  }
  return snapshot;
}

const lastOf = (messages: BaseMessage[]) => messages[messages.length - 1];

/**
 * A scripted agent and tool, compiled with the checkpointer: each user message gets one tool
 * call, a tool result of `toolOutput` characters, then an answer naming the question. `beforeAnswer`,
 * when given, is awaited by the agent before it answers (explicit synchronisation for tests);
 * `interruptBefore` is LangGraph's.
 */
export function scriptedGraph(
  checkpointer: BaseCheckpointSaver,
  options: { toolOutput?: number; beforeAnswer?: () => Promise<void>; interruptBefore?: ("agent" | "tools")[] } = {},
) {
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async ({ messages }) => {
      const last = lastOf(messages);
      if (HumanMessage.isInstance(last)) {
        return { messages: [new AIMessage({ content: "", tool_calls: [{ id: randomUUID(), name: "lookup", args: {} }] })] };
      }
      await options.beforeAnswer?.();
      const question = [...messages].reverse().find((m) => HumanMessage.isInstance(m));
      return { messages: [new AIMessage(`answer to ${String(question?.content)}`)] };
    })
    .addNode("tools", ({ messages }) => {
      const call = (lastOf(messages) as AIMessage).tool_calls?.[0];
      return { messages: [new ToolMessage({ content: "r".repeat(options.toolOutput ?? 200), tool_call_id: call?.id ?? "" })] };
    })
    .addEdge(START, "agent")
    .addConditionalEdges("agent", ({ messages }) => ((lastOf(messages) as AIMessage).tool_calls?.length ? "tools" : END))
    .addEdge("tools", "agent")
    .compile({ checkpointer, interruptBefore: options.interruptBefore });
}

/** A promise to wait on and the function that settles it. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * LangGraph's serializer that, once armed, stops on the first value containing `marker` until
 * released: a write can be held after it started and before it reaches the database.
 */
export class GatedSerializer implements SerializerProtocol {
  private readonly inner = new JsonPlusSerializer();
  private armed?: { marker: string; reached: () => void; release: Promise<void> };

  /** Resolves when a value containing `marker` is being serialized; that write waits for `release`. */
  arm(marker: string, release: Promise<void>): Promise<void> {
    return new Promise<void>((reached) => (this.armed = { marker, reached, release }));
  }

  async dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
    const result = await this.inner.dumpsTyped(value);
    const armed = this.armed;
    if (armed && new TextDecoder().decode(result[1]).includes(armed.marker)) {
      this.armed = undefined;
      armed.reached();
      await armed.release;
    }
    return result;
  }

  loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    return this.inner.loadsTyped(type, data);
  }
}
