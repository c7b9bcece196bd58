import { AIMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, Command, END, MemorySaver, START, Send, StateGraph, interrupt, messagesStateReducer } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { CheckpointNotFoundError } from "../../../lib/errors.js";
import { prng } from "../../../lib/prng.js";
import type { TestDatabase } from "../../support/mongo.js";
import { newSaver, snapshotThread } from "./saver-support.js";

/*
 * The differential harness of test/store/threadwise-saver-differential*.test.ts: one graph, the
 * same LangGraph calls made with MemorySaver and with ThreadwiseSaver, their answers compared.
 */

const State = Annotation.Root({
  input: Annotation<string>,
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  total: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  notes: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
});
type S = typeof State.State;

/**
 * One graph with every feature the checkpointer must carry, steered by characters of the input:
 * `plan` fans out to `left` and `right` in parallel (both adding to the reduced `log` and
 * `total`) and to `worker` by `Send` (input length mod 3 of them); `review` then runs the
 * subgraph `sub` (its own checkpoint namespace), which runs the subgraph `inner` (a namespace
 * within it). `?` interrupts `review`, `!` the subgraph, `^` the inner one, `%` both `left` and
 * `right` in one step, `&` the first worker; `#` fails the second worker once per graph; `~`
 * removes the first note (a message list that is not its parent's extended).
 */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  // Long inputs stay in the `input` channel; what the nodes log of them is short.
  const failed = new Set<string>();
  const maybeInterrupt = (s: S, char: string, name: string) => (s.input?.includes(char) ? `${name}:${interrupt(`${name} ${tag(s.input)}`)}` : name);
  const inner = new StateGraph(State)
    .addNode("i1", (s: S) => ({ log: [maybeInterrupt(s, "^", "i1")] }))
    .addEdge(START, "i1")
    .addEdge("i1", END)
    .compile();
  const sub = new StateGraph(State)
    .addNode("s1", (s: S) => ({ log: [`s1:${tag(s.input)}`] }))
    .addNode("s2", (s: S) => ({ log: [s.input?.includes("!") ? `s2:${interrupt(`sub ${tag(s.input)}`)}` : "s2"] }))
    .addNode("inner", inner)
    .addEdge(START, "s1")
    .addEdge("s1", "s2")
    .addEdge("s2", "inner")
    .addEdge("inner", END)
    .compile();
  return new StateGraph(State)
    .addNode("plan", (s: S) => ({ log: [`plan:${tag(s.input)}`], total: 1 }))
    .addNode("left", (s: S) => ({ log: [maybeInterrupt(s, "%", "left")], total: 10 }))
    .addNode("right", (s: S) => {
      const removed = s.input?.includes("~") && s.notes.length > 0 ? [new RemoveMessage({ id: s.notes[0].id as string })] : [];
      const note = new AIMessage({ id: `m${s.log.length}`, content: `note ${tag(s.input)}` });
      return { log: [maybeInterrupt(s, "%", "right")], total: 100, notes: [...removed, note] };
    })
    .addNode("worker", (s: S & { item: number }) => {
      const key = `${s.input}:${s.item}`;
      if (s.input?.includes("#") && s.item === 1 && !failed.has(key)) {
        failed.add(key);
        throw new Error(`worker ${key} failed`);
      }
      return { log: [s.item === 0 ? maybeInterrupt(s, "&", "w0") : `w${s.item}`], total: 1000 };
    })
    .addNode("review", (s: S) => ({ log: [maybeInterrupt(s, "?", "review")] }))
    .addNode("sub", sub)
    .addEdge(START, "plan")
    .addConditionalEdges(
      "plan",
      (s: S) => ["left", "right", ...Array.from({ length: (s.input?.length ?? 0) % 3 }, (_, item) => new Send("worker", { ...s, item }))],
      ["left", "right", "worker"],
    )
    .addEdge("left", "review")
    .addEdge("right", "review")
    .addEdge("worker", "review")
    .addEdge("review", "sub")
    .addEdge("sub", END)
    .compile({ checkpointer });
}

export type Graph = ReturnType<typeof buildGraph>;

/** An input as logged and described: its start and length when long. */
const tag = (input: string | undefined) => (input !== undefined && input.length > 8 ? `${input.slice(0, 4)}…(${input.length})` : input);

/** Inputs steering the graph; the long ones are above the size a header keeps inline (`DEFAULT_INLINE_VALUE_BYTES`). */
const INPUTS = [
  "a",
  "bb",
  "c?",
  "dd!",
  "e#",
  "ff?!",
  "g#?",
  "hhh",
  "i%",
  "jj&",
  "k~",
  "ll~%",
  "m&?",
  "p^",
  "q!^",
  `${"n".repeat(5000)}?`,
  `${"o".repeat(5000)}!%`,
];
const KINDS = [
  ...["invoke", "invoke", "resume", "resumeOne", "null", "streamValues", "streamUpdates", "state", "history", "update", "fork", "delete"],
  ...["invokeBreak", "command", "subState", "subUpdate"],
] as const;
const AS_NODES = [undefined, "plan", "left", "review", "sub", "worker", "__copy__", "__input__", "__end__", "none"] as const;
const SOURCES = ["input", "loop", "update", "fork"] as const;

/** One LangGraph call, with every choice drawn beforehand so that both checkpointers get the same call. */
export interface Op {
  step: number;
  kind: (typeof KINDS)[number];
  thread: string;
  input: string;
  asNode: (typeof AS_NODES)[number];
  source: (typeof SOURCES)[number];
  /** Which checkpoint of the history an op on an older one takes, and its other choices. */
  r1: number;
  r2: number;
}

export function randomOps(seed: number, count: number): Op[] {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  return Array.from({ length: count }, (_, step) => ({
    step,
    thread: pick(["t1", "t2"]),
    kind: pick(KINDS),
    input: pick(INPUTS),
    asNode: pick(AS_NODES),
    source: pick(SOURCES),
    r1: random(),
    r2: random(),
  }));
}

const ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b/g;

/**
 * Makes one checkpointer's answers comparable with the other's: checkpoint, task and interrupt
 * ids (different on each run) become `id<n>` in the order they are first seen over the whole
 * sequence, so a wrong parent or a missing checkpoint still shows; timestamps, LangGraph's
 * internal configurable keys and the fence epoch are dropped.
 */
export class Normalizer {
  private readonly tokens = new Map<string, string>();
  private readonly ids = new Map<string, string>();

  normalize(value: unknown): unknown {
    if (typeof value === "string") return value.replace(ID, (id) => this.token(id));
    if (Array.isArray(value)) return value.map((item) => this.normalize(item));
    if (value instanceof Error) return { error: value.name, message: this.normalize(value.message) };
    if (value !== null && typeof value === "object") {
      // LangGraph puts the checkpointer itself in some configs it returns (`__pregel_checkpointer`),
      // and returns the caller's config (with our fence epoch) for a thread without checkpoints.
      const entries = Object.entries(value).filter(([key]) => !["createdAt", "ts", "fence_epoch"].includes(key) && !key.startsWith("__pregel_"));
      // In key order: ids are numbered as first seen, and the order of keys is no part of an answer.
      entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return Object.fromEntries(entries.map(([key, item]) => [this.normalize(key), this.normalize(item)]));
    }
    return value;
  }

  /** The id a token stands for. */
  id(token: string): string {
    const id = this.ids.get(token);
    if (id === undefined) throw new Error(`no id seen for ${token}`);
    return id;
  }

  private token(id: string): string {
    let token = this.tokens.get(id);
    if (token === undefined) {
      token = `id${this.tokens.size}`;
      this.tokens.set(id, token);
      this.ids.set(token, id);
    }
    return token;
  }
}

/** One side of the comparison: a checkpointer, its graph and its normalizer. */
export interface Side {
  saver: BaseCheckpointSaver;
  graph: Graph;
  normalizer: Normalizer;
  /** `configurable` keys every call passes (the product passes its fence epoch). */
  configurable: Record<string, unknown>;
}

export function side(saver: BaseCheckpointSaver, configurable: Record<string, unknown> = {}): Side {
  return { saver, graph: buildGraph(saver), normalizer: new Normalizer(), configurable };
}

export async function history(graph: Graph, config: RunnableConfig, options?: Parameters<Graph["getStateHistory"]>[1]) {
  const snapshots = [];
  for await (const snapshot of graph.getStateHistory(config, options)) snapshots.push(snapshot);
  return snapshots;
}

export async function historyOptions(op: Op, older: () => Promise<RunnableConfig>) {
  return {
    limit: op.r1 < 0.5 ? Math.floor(op.r2 * 5) + 1 : undefined,
    before: op.r2 < 0.3 ? await older() : undefined,
    filter: op.r1 > 0.7 ? { source: op.source } : op.r1 > 0.6 ? { step: Math.floor(op.r2 * 4) } : undefined,
  };
}

/** Runs one op through LangGraph's API; `older` picks a checkpoint of the thread's history (for forks and time travel). */
export async function runOp(side: Side, op: Op, older: () => Promise<RunnableConfig>, subgraphHistoryLimit?: number): Promise<unknown> {
  const { graph, saver } = side;
  const config = { configurable: { ...side.configurable, thread_id: op.thread } };
  const at = async (useOlder: boolean) => (useOlder ? { configurable: { ...side.configurable, ...(await older()).configurable } } : config);
  switch (op.kind) {
    case "invoke":
      return graph.invoke({ input: op.input }, config);
    case "resume":
      return graph.invoke(new Command({ resume: `r${op.step}` }), config);
    case "resumeOne": {
      const ids = (await graph.getState(config)).tasks.flatMap((task) => task.interrupts.map((i) => i.id as string));
      const resume = ids.length === 0 ? `r${op.step}` : { [ids[Math.floor(op.r1 * ids.length)]]: `one${op.step}` };
      return graph.invoke(new Command({ resume }), config);
    }
    case "null":
      return graph.invoke(null, config);
    case "streamValues":
    case "streamUpdates": {
      const chunks = [];
      const streamMode = op.kind === "streamValues" ? "values" : "updates";
      for await (const chunk of await graph.stream({ input: op.input }, { ...config, streamMode, subgraphs: op.r2 < 0.5 })) chunks.push(chunk);
      return chunks;
    }
    case "state":
      return graph.getState(await at(op.r1 >= 0.5), { subgraphs: op.r2 < 0.5 });
    case "history":
      return history(graph, config, await historyOptions(op, older));
    case "update": {
      const target = await at(op.r2 >= 0.5);
      if (op.asNode === "none") return graph.updateState(target, null);
      if (op.asNode === "__end__") return graph.updateState(target, null, op.asNode);
      if (op.asNode === "__input__") return graph.updateState(target, { input: op.input }, op.asNode);
      return graph.updateState(target, { log: [`u${op.step}`], total: 5 }, op.asNode);
    }
    case "fork":
      return graph.invoke(op.r2 < 0.5 ? null : { input: op.input }, await at(true));
    case "delete":
      return saver.deleteThread(op.thread);
    case "invokeBreak":
      return graph.invoke({ input: op.input }, { ...config, ...(op.r2 < 0.5 ? { interruptBefore: ["review"] } : { interruptAfter: ["plan"] }) });
    case "command":
      return graph.invoke(new Command({ update: { log: [`c${op.step}`] }, goto: op.r2 < 0.5 ? "review" : "left" }), config);
    case "subState":
    case "subUpdate": {
      // A subgraph task's state, as getState without subgraphs gives it, is the config of its namespace.
      const subgraph = (await graph.getState(config)).tasks.find((task) => task.state !== undefined)?.state as RunnableConfig | undefined;
      if (subgraph === undefined) return "no subgraph task";
      if (op.kind === "subUpdate") return graph.updateState(subgraph, { log: [`su${op.step}`] }, "s1");
      return { state: await graph.getState(subgraph), history: await history(graph, subgraph, { limit: subgraphHistoryLimit }) };
    }
  }
}

/** What `run` returned, or the error it threw, normalized. */
export async function outcome(side: Side, run: () => Promise<unknown>): Promise<unknown> {
  try {
    return side.normalizer.normalize(await run());
  } catch (error) {
    return side.normalizer.normalize(error);
  }
}

/** The config of the checkpoint at the op's position in the side's history of the thread. */
async function olderIn(s: Side, op: Op): Promise<RunnableConfig> {
  const snapshots = await history(s.graph, { configurable: { thread_id: op.thread } });
  return snapshots.length === 0 ? { configurable: { thread_id: op.thread } } : snapshots[Math.floor(op.r1 * snapshots.length)].config;
}

/** The op's answer from both sides; an older checkpoint is the same position in both histories. */
export async function both(memory: Side, ours: Side, op: Op): Promise<{ memory: unknown; ours: unknown }> {
  return {
    memory: await outcome(memory, () => runOp(memory, op, () => olderIn(memory, op))),
    ours: await outcome(ours, () => runOp(ours, op, () => olderIn(ours, op))),
  };
}

/** Every checkpoint of the thread, in every namespace, as it reads back (values in any key order). */
async function storedThread(saver: BaseCheckpointSaver, threadId: string): Promise<Map<string, unknown>> {
  return new Map([...(await snapshotThread(saver, threadId))].map(([id, bytes]) => [id, JSON.parse(bytes)]));
}

/** Whether the parent of the checkpoint at `config` is stored (or it has none). */
async function parentKept(s: Side, config: RunnableConfig): Promise<boolean> {
  const parent = (await s.graph.getState(config)).parentConfig;
  return parent === undefined || (await s.saver.getTuple(parent)) !== undefined;
}

/** The checkpoint token of a snapshot, as normalized. */
const tokenOf = (snapshot: unknown) => (snapshot as { config: { configurable: { checkpoint_id: string } } }).config.configurable.checkpoint_id;

/**
 * As {@link both}, on a thread the product prunes: an older checkpoint is one our saver kept, and
 * MemorySaver is given the same checkpoint (by token). A history lists the kept checkpoints, so
 * MemorySaver's is cut to those before its limit applies.
 */
export async function bothPruned(memory: Side, ours: Side, op: Op): Promise<{ memory: unknown; ours: unknown }> {
  const thread = { configurable: { thread_id: op.thread } };
  const kept = new Set(((await outcome(ours, () => history(ours.graph, thread))) as unknown[]).map(tokenOf));
  const olderKept = async (): Promise<RunnableConfig> => {
    const config = await olderIn(ours, op);
    const token = ours.normalizer.normalize(config.configurable?.checkpoint_id);
    return typeof token === "string" ? { configurable: { ...config.configurable, checkpoint_id: memory.normalizer.id(token) } } : config;
  };
  if (op.kind === "update" && op.asNode === "__copy__" && !(await parentKept(ours, op.r2 >= 0.5 ? await olderIn(ours, op) : thread))) {
    // A copy is put under its source's parent: gone, it is refused (docs/storage.md), changing nothing.
    const before = await storedThread(ours.saver, op.thread);
    await expect(runOp(ours, op, () => olderIn(ours, op))).rejects.toThrow(CheckpointNotFoundError);
    expect(await storedThread(ours.saver, op.thread)).toEqual(before);
    return { memory: "refused", ours: "refused" };
  }
  if (op.kind === "subState") {
    // Prune keeps a subgraph namespace's latest checkpoints: its history is MemorySaver's newest ones.
    const answer = await outcome(ours, () => runOp(ours, op, () => olderIn(ours, op)));
    const kept = (answer as { history?: unknown[] }).history?.length;
    return { memory: await outcome(memory, () => runOp(memory, op, olderKept, kept)), ours: answer };
  }
  if (op.kind !== "history") {
    return {
      memory: await outcome(memory, () => runOp(memory, op, olderKept)),
      ours: await outcome(ours, () => runOp(ours, op, () => olderIn(ours, op))),
    };
  }
  const { limit, ...options } = await historyOptions(op, olderKept);
  const listed = (await outcome(memory, () => history(memory.graph, thread, options))) as unknown[];
  return {
    memory: listed.filter((snapshot) => kept.has(tokenOf(snapshot))).slice(0, limit),
    ours: await outcome(ours, () => runOp(ours, op, () => olderIn(ours, op))),
  };
}

export const describeOp = (op: Op) => `step ${op.step}: ${op.kind} on ${op.thread} (input ${tag(op.input)}, asNode ${op.asNode})`;

/** Both threads' full state and history, compared. */
export async function expectSameThreads(memory: Side, ours: Side, when: string): Promise<void> {
  for (const thread_id of ["t1", "t2"]) {
    const read = (s: Side) => async () => ({
      state: await s.graph.getState({ configurable: { thread_id } }),
      history: await history(s.graph, { configurable: { thread_id } }),
    });
    expect(await outcome(ours, read(ours)), `${thread_id} ${when}`).toEqual(await outcome(memory, read(memory)));
  }
}

/** Both threads' state, and the checkpoints our saver kept as MemorySaver has them. */
async function expectKeptThreads(memory: Side, ours: Side, when: string): Promise<void> {
  for (const thread_id of ["t1", "t2"]) {
    const read = (s: Side) => async () => ({
      state: await s.graph.getState({ configurable: { thread_id } }),
      history: await history(s.graph, { configurable: { thread_id } }),
    });
    const kept = (await outcome(ours, read(ours))) as { history: unknown[] };
    const all = (await outcome(memory, read(memory))) as { history: unknown[] };
    const tokens = new Set(kept.history.map(tokenOf));
    expect(kept, `${thread_id} ${when}`).toEqual({ ...all, history: all.history.filter((snapshot) => tokens.has(tokenOf(snapshot))) });
  }
}

/**
 * Runs the ops as the product runs turns (each under a new fence epoch, pruning after it) and
 * compares every answer and both threads, before and after each prune, with MemorySaver's.
 */
export async function expectSameAnswersPruned(test: TestDatabase, ops: Op[]): Promise<void> {
  const memory = side(new MemorySaver());
  const saver = (await newSaver(test)).saver;
  const ours = side(saver);
  for (const op of ops) {
    const fenceEpoch = op.step + 1;
    await saver.claimThread(op.thread, fenceEpoch);
    ours.configurable = { fence_epoch: fenceEpoch };
    const answers = await bothPruned(memory, ours, op);
    expect(answers.ours, describeOp(op)).toEqual(answers.memory);
    await expectKeptThreads(memory, ours, `before prune, after ${describeOp(op)}`);
    // Deleting removes the fence with the thread (docs/storage.md, Fencing): nothing left to prune.
    if (op.kind !== "delete") await saver.prune(op.thread, { fenceEpoch });
    await expectKeptThreads(memory, ours, `after prune, after ${describeOp(op)}`);
  }
}

/** An op of a named scenario: on the latest checkpoint of t1 unless told otherwise. */
export const op = (step: number, kind: Op["kind"], fields: Partial<Op> = {}): Op => ({
  step,
  kind,
  thread: "t1",
  input: "a",
  asNode: undefined,
  source: "input",
  r1: 0,
  r2: 0,
  ...fields,
});

/** Runs the ops on both sides, comparing every answer, then both threads whole. */
export async function expectSameAnswers(test: TestDatabase, ops: Op[]): Promise<{ memory: Side; ours: Side }> {
  const memory = side(new MemorySaver());
  const ours = side((await newSaver(test)).saver);
  for (const next of ops) {
    const answers = await both(memory, ours, next);
    expect(answers.ours, describeOp(next)).toEqual(answers.memory);
  }
  await expectSameThreads(memory, ours, "after the scenario");
  return { memory, ours };
}
