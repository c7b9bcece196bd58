import { AIMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, Command, END, MemorySaver, START, Send, StateGraph, interrupt, messagesStateReducer } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { CheckpointNotFoundError, StaleWriterError } from "../../lib/errors.js";
import { prng } from "../../lib/prng.js";
import { propertyRuns } from "../support/property-runs.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { newSaver, snapshotThread } from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("differential", { clearBeforeEach: false });

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
 * subgraph `sub` (its own checkpoint namespace). `?` interrupts `review`, `!` the subgraph, `%`
 * both `left` and `right` in one step, `&` the first worker; `#` fails the second worker once
 * per graph; `~` removes the first note (a message list that is not its parent's extended).
 */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  const failed = new Set<string>();
  const sub = new StateGraph(State)
    .addNode("s1", (s: S) => ({ log: [`s1:${s.input}`] }))
    .addNode("s2", (s: S) => ({ log: [s.input?.includes("!") ? `s2:${interrupt(`sub ${s.input}`)}` : "s2"] }))
    .addEdge(START, "s1")
    .addEdge("s1", "s2")
    .addEdge("s2", END)
    .compile();
  const maybeInterrupt = (s: S, char: string, name: string) => (s.input?.includes(char) ? `${name}:${interrupt(`${name} ${s.input}`)}` : name);
  return new StateGraph(State)
    .addNode("plan", (s: S) => ({ log: [`plan:${s.input}`], total: 1 }))
    .addNode("left", (s: S) => ({ log: [maybeInterrupt(s, "%", "left")], total: 10 }))
    .addNode("right", (s: S) => {
      const removed = s.input?.includes("~") && s.notes.length > 0 ? [new RemoveMessage({ id: s.notes[0].id as string })] : [];
      const note = new AIMessage({ id: `m${s.log.length}`, content: `note ${s.input}` });
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

type Graph = ReturnType<typeof buildGraph>;

const INPUTS = ["a", "bb", "c?", "dd!", "e#", "ff?!", "g#?", "hhh", "i%", "jj&", "k~", "ll~%", "m&?"];
const KINDS = ["invoke", "invoke", "resume", "resumeOne", "null", "streamValues", "streamUpdates", "state", "history", "update", "fork", "delete"] as const;
const AS_NODES = [undefined, "plan", "left", "review", "sub", "worker", "__copy__", "__input__", "__end__", "none"] as const;
const SOURCES = ["input", "loop", "update", "fork"] as const;

/** One LangGraph call, with every choice drawn beforehand so that both checkpointers get the same call. */
interface Op {
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

function randomOps(seed: number, count: number): Op[] {
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
class Normalizer {
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
interface Side {
  saver: BaseCheckpointSaver;
  graph: Graph;
  normalizer: Normalizer;
  /** `configurable` keys every call passes (the product passes its fence epoch). */
  configurable: Record<string, unknown>;
}

function side(saver: BaseCheckpointSaver, configurable: Record<string, unknown> = {}): Side {
  return { saver, graph: buildGraph(saver), normalizer: new Normalizer(), configurable };
}

async function history(graph: Graph, config: RunnableConfig, options?: Parameters<Graph["getStateHistory"]>[1]) {
  const snapshots = [];
  for await (const snapshot of graph.getStateHistory(config, options)) snapshots.push(snapshot);
  return snapshots;
}

async function historyOptions(op: Op, older: () => Promise<RunnableConfig>) {
  return {
    limit: op.r1 < 0.5 ? Math.floor(op.r2 * 5) + 1 : undefined,
    before: op.r2 < 0.3 ? await older() : undefined,
    filter: op.r1 > 0.7 ? { source: op.source } : op.r1 > 0.6 ? { step: Math.floor(op.r2 * 4) } : undefined,
  };
}

/** Runs one op through LangGraph's API; `older` picks a checkpoint of the thread's history (for forks and time travel). */
async function runOp(side: Side, op: Op, older: () => Promise<RunnableConfig>): Promise<unknown> {
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
  }
}

/** What `run` returned, or the error it threw, normalized. */
async function outcome(side: Side, run: () => Promise<unknown>): Promise<unknown> {
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
async function both(memory: Side, ours: Side, op: Op): Promise<{ memory: unknown; ours: unknown }> {
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
async function bothPruned(memory: Side, ours: Side, op: Op): Promise<{ memory: unknown; ours: unknown }> {
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

const describeOp = (op: Op) => `step ${op.step}: ${op.kind} on ${op.thread} (input ${op.input}, asNode ${op.asNode})`;

/** Both threads' full state and history, compared. */
async function expectSameThreads(memory: Side, ours: Side, when: string): Promise<void> {
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
async function expectSameAnswersPruned(ops: Op[]): Promise<void> {
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
const op = (step: number, kind: Op["kind"], fields: Partial<Op> = {}): Op => ({
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
async function expectSameAnswers(ops: Op[]): Promise<{ memory: Side; ours: Side }> {
  const memory = side(new MemorySaver());
  const ours = side((await newSaver(test)).saver);
  for (const next of ops) {
    const answers = await both(memory, ours, next);
    expect(answers.ours, describeOp(next)).toEqual(answers.memory);
  }
  await expectSameThreads(memory, ours, "after the scenario");
  return { memory, ours };
}

describe("ThreadwiseSaver against MemorySaver, through LangGraph's API", () => {
  describe("named scenarios", () => {
    it("keeps every channel value of a checkpoint that updateState copies (asNode __copy__), and runs on from the copy", async () => {
      await expectSameAnswers([op(0, "invoke", { input: "a" }), op(1, "update", { asNode: "__copy__" }), op(2, "state"), op(3, "null"), op(4, "invoke")]);
    });

    it("resumes one of two interrupts raised in one step, keeping the other pending, then the other", async () => {
      await expectSameAnswers([op(0, "invoke", { input: "i%" }), op(1, "resumeOne"), op(2, "state"), op(3, "resumeOne"), op(4, "state")]);
    });

    it("re-runs only the Send task that failed, keeping the writes of the tasks that succeeded", async () => {
      const { ours } = await expectSameAnswers([op(0, "invoke", { input: "e#" }), op(1, "state"), op(2, "null")]);
      const { values } = await ours.graph.getState({ configurable: { thread_id: "t1" } });
      // The step before `review`: each task's write once, the failed worker's from its second run.
      expect(values.log.slice(0, values.log.indexOf("review")).sort()).toEqual(["left", "plan:e#", "right", "w0", "w1"]);
    });

    it("resumes a subgraph interrupted in its own namespace, and a Send task interrupted beside it", async () => {
      await expectSameAnswers([
        op(0, "invoke", { input: "dd!" }),
        op(1, "state", { r2: 0 }),
        op(2, "resume"),
        op(3, "invoke", { input: "m&?" }),
        op(4, "resume"),
        op(5, "resume"),
      ]);
    });

    it("forks from an older checkpoint with input, with updateState, and with a replay, keeping the original branch in history", async () => {
      await expectSameAnswers([
        op(0, "invoke", { input: "bb" }),
        op(1, "invoke", { input: "k~" }),
        op(2, "fork", { input: "ll~%", r1: 0.5, r2: 0.9 }),
        op(3, "update", { asNode: "left", r1: 0.7, r2: 0.9 }),
        op(4, "fork", { r1: 0.3, r2: 0.1 }),
        op(5, "history", { r1: 0.55, r2: 0.1 }),
      ]);
    });

    it("deletes one thread and leaves the other as it was", async () => {
      await expectSameAnswers([
        op(0, "invoke", { input: "bb" }),
        op(1, "invoke", { thread: "t2", input: "c?" }),
        op(2, "delete"),
        op(3, "state"),
        op(4, "resume", { thread: "t2" }),
      ]);
    });
  });

  describe("named scenarios, pruned after every call", () => {
    it("shows the subgraph state of a kept checkpoint whose step ran the subgraph, as MemorySaver does", async () => {
      const saver = (await newSaver(test)).saver;
      const states = [];
      for (const s of [side(new MemorySaver()), side(saver)]) {
        const thread = { configurable: { thread_id: "t1" } };
        await s.graph.invoke({ input: "bb" }, thread);
        const beforeSub = (await history(s.graph, thread)).find((snapshot) => snapshot.next.includes("sub"));
        // An update before the subgraph's step is a run start, which prune keeps; the subgraph runs under it.
        const update = await s.graph.updateState(beforeSub?.config ?? thread, { log: ["edited"] }, "review");
        await s.graph.invoke(null, update);
        if (s.saver === saver) await saver.prune("t1");
        states.push(
          (await s.graph.getState(update, { subgraphs: true })).tasks.map((task) => (task.state && "values" in task.state ? task.state.values : task.state)),
        );
      }
      expect(states[1]).toEqual(states[0]);
      expect(states[1]).toMatchObject([{ log: expect.arrayContaining(["edited", "s1:bb", "s2"]) }]);
    });
  });

  describe("where it deliberately differs (README, Checkpoint storage)", () => {
    it("throws CheckpointNotFoundError, writing nothing, where MemorySaver starts afresh from a checkpoint id never written", async () => {
      const { memory, ours } = await expectSameAnswers([op(0, "invoke", { input: "bb" })]);
      const before = await outcome(ours, () => history(ours.graph, { configurable: { thread_id: "t1" } }));
      const unknown = { configurable: { thread_id: "t1", checkpoint_id: "1ef00000-0000-6000-8000-000000000000" } };
      await expect(memory.graph.invoke({ input: "a" }, unknown)).resolves.toMatchObject({ input: "a", total: 2222 });
      await expect(ours.graph.invoke({ input: "a" }, unknown)).rejects.toThrow(CheckpointNotFoundError);
      expect(await outcome(ours, () => history(ours.graph, { configurable: { thread_id: "t1" } }))).toEqual(before);
    });

    it("throws StaleWriterError for a writer fenced out mid-thread, leaving the thread as MemorySaver has it without that call", async () => {
      const memory = side(new MemorySaver());
      const saver = (await newSaver(test)).saver;
      const ours = side(saver, { fence_epoch: 1 });
      await saver.claimThread("t1", 1);
      for (const next of [op(0, "invoke", { input: "c?" }), op(1, "update", { asNode: "plan" })]) {
        const answers = await both(memory, ours, next);
        expect(answers.ours, describeOp(next)).toEqual(answers.memory);
      }
      await saver.claimThread("t1", 2);
      for (const refused of [op(2, "resume"), op(3, "update", { asNode: "left" }), op(4, "fork", { r1: 0.5 })]) {
        await expect(runOp(ours, refused, async () => (await history(ours.graph, { configurable: { thread_id: "t1" } }))[1].config)).rejects.toThrow(
          StaleWriterError,
        );
      }
      await expectSameThreads(memory, ours, "after the refused calls");
    });
  });

  describe("random sequences of graph operations, pruned and fenced as the product runs turns", () => {
    const seeds = Array.from({ length: propertyRuns(3) }, (_, i) => 100 + i);
    it.each(seeds)("returns what MemorySaver returns for the checkpoints prune keeps, seed %i", async (seed) => {
      await expectSameAnswersPruned(randomOps(seed, 40));
    });
  });

  describe("random sequences of graph operations", () => {
    const seeds = Array.from({ length: propertyRuns(6) }, (_, i) => i + 1);
    it.each(seeds)("returns what MemorySaver returns for every call, seed %i", async (seed) => {
      const memory = side(new MemorySaver());
      const ours = side((await newSaver(test)).saver);
      for (const op of randomOps(seed, 40)) {
        const answers = await both(memory, ours, op);
        expect(answers.ours, describeOp(op)).toEqual(answers.memory);
      }
      await expectSameThreads(memory, ours, "at the end");
    });
  });
});
