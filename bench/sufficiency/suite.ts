/**
 * Loads the suite and turns each case into what the policies see: the thread's messages (as the
 * graph checkpoints them, large outputs offloaded to the artifact store exactly as
 * `offloadToolOutput` does) and, for policies of other frameworks, the raw thread with every output
 * inline. Each case gets a conversation of its own in the real stores (the embedded MongoDB server
 * through the real driver): its offloaded outputs in `artifacts`, its finished turns in the recall
 * index, recorded as `TurnIndexer` records them.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { apiPrincipal } from "../../lib/auth/principal.js";
import type { TenantKeys } from "../../lib/crypto/tenant-keys.js";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { toolOutputNotice } from "../../lib/model-view/tool-output-notice.js";
import { offloadedArtifact } from "../../lib/model-view/tool-output-artifact.js";
import { recallEntryTerms, recallToolOutputs } from "../../lib/recall/turn-indexer.js";
import type { MongoClient } from "mongodb";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { createReadToolOutputTool } from "../../lib/tools/read-tool-output.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import type { RecallEntry, RecallIndexStore, RecallTurnDocument } from "../../lib/store/recall-index-store.js";
import type { WriteFence } from "../../lib/store/write-fence.js";
import { DEFAULT_OFFLOAD_TOKENS, offloadToolOutput } from "../../lib/tools/output-offload.js";
import { CASE_KINDS, caseSchema, fillersSchema, type Fillers, type SufficiencyCase, type ToolCallSpec, type TurnSpec } from "./case-schema.js";
import { CASES_DIR } from "./paths.js";

export const SUITE_OWNER = apiPrincipal("sufficiency-suite");

export interface Suite {
  cases: SufficiencyCase[];
  fillers: Fillers;
}

export async function loadSuite(dir = CASES_DIR): Promise<Suite> {
  const fillers = fillersSchema.parse(JSON.parse(await readFile(join(dir, "fillers.json"), "utf8")));
  const cases: SufficiencyCase[] = [];
  for (const kind of CASE_KINDS) {
    const text = await readFile(join(dir, `${kind}.jsonl`), "utf8");
    for (const line of text.split("\n")) if (line.trim()) cases.push(caseSchema.parse(JSON.parse(line)));
  }
  return { cases, fillers };
}

export function resolveTurns(c: SufficiencyCase, fillers: Fillers): TurnSpec[] {
  return c.turns.map((turn) => {
    if (!("filler" in turn)) return turn;
    const filler = fillers[turn.filler];
    if (!filler) throw new Error(`${c.id}: unknown filler ${turn.filler}`);
    return filler;
  });
}

/** A case made ready: its conversation in the stores and its thread two ways. */
export interface LoadedCase {
  case: SufficiencyCase;
  conversationId: string;
  /** As Threadwise checkpoints it: outputs over the offload threshold are previews with an artifact. */
  thread: BaseMessage[];
  /** As stock LangGraph keeps it (and other frameworks' sessions): every output inline. */
  rawThread: BaseMessage[];
  finishedTurns: number;
  /** The finished turns, fillers resolved, oldest first. */
  turns: SuiteTurn[];
  /** The product's `read_tool_output` on the artifact store that holds this case's outputs. */
  readToolOutput: ToolDefinition;
}

/** Cases loaded into one database before the next is opened: the embedded server's inserts slow down as a collection grows. */
export const CASES_PER_DATABASE = 10;

/**
 * Databases for loading cases, a new one (its collections set up) every `CASES_PER_DATABASE` cases:
 * every tool output is stored (`offloadToolOutput`), and the embedded server checks unique keys by
 * comparing with every document, so one collection for the whole suite would take most of an hour.
 */
export class SuiteDatabases {
  readonly #opened: { name: string; database: ThreadwiseDatabase }[] = [];
  #loaded = 0;

  constructor(
    private readonly client: MongoClient,
    private readonly prefix: string,
    /** Default: {@link CASES_PER_DATABASE}; `Infinity` keeps every case in one database (one recall index to search). */
    private readonly casesPerDatabase = CASES_PER_DATABASE,
    /** Tenants' keys, to store the cases' contents encrypted (`--encryption on`). Default: none, contents in clear. */
    private readonly contentKeys?: TenantKeys,
  ) {}

  /** The database for the next case. */
  async next(): Promise<ThreadwiseDatabase> {
    if (this.#opened.length === 0 || this.#loaded % this.casesPerDatabase === 0) {
      const name = `${this.prefix}_${this.#opened.length}`;
      const database = new ThreadwiseDatabase(this.client, { dbName: name, ...(this.contentKeys && { contentKeys: this.contentKeys }) });
      await database.setup();
      this.#opened.push({ name, database });
    }
    this.#loaded++;
    return this.#opened[this.#opened.length - 1].database;
  }

  /** Drops every database opened. */
  async drop(): Promise<void> {
    for (const { name } of this.#opened) await this.client.db(name).dropDatabase();
  }
}

export type SuiteTurn = TurnSpec;

type Offload = (call: ToolCallSpec, turn: number) => Promise<{ content: string; artifact?: ToolMessage["artifact"] }>;

async function messagesOf(turns: readonly TurnSpec[], c: SufficiencyCase, offload: Offload): Promise<BaseMessage[]> {
  const messages: BaseMessage[] = [];
  const steps = async (stepList: readonly ToolCallSpec[][], turn: number) => {
    for (const step of stepList) {
      messages.push(
        new AIMessage({ content: "", tool_calls: step.map((call) => ({ id: call.id, name: call.name, args: call.args, type: "tool_call" as const })) }),
      );
      for (const call of step) {
        const { content, artifact } = await offload(call, turn);
        messages.push(new ToolMessage({ content, tool_call_id: call.id, name: call.name, artifact, ...(call.status && { status: call.status }) }));
      }
    }
  };
  for (const [i, turn] of turns.entries()) {
    messages.push(new HumanMessage(turn.question));
    // Filler turns are shared between cases: ids are made unique per turn.
    await steps(
      turn.steps.map((step) => step.map((call) => ({ ...call, id: `t${i}-${call.id}` }))),
      i,
    );
    messages.push(new AIMessage(turn.answer));
  }
  messages.push(new HumanMessage(c.followUp));
  await steps(c.activeSteps, turns.length);
  return messages;
}

/** Where finished turns are indexed: the real `RecallIndexStore`, or `MemoryRecallIndex`. */
export interface RecallSink {
  add(record: RecallTurnDocument, entry: Pick<RecallEntry, "length" | "terms">, fence: WriteFence): Promise<void>;
}

/**
 * The two reads `ConversationSearch` makes, from memory, for runs that load thousands of turns fast
 * (the `npm test` subset, `--recall memory`): entries and records exactly as the store would return them.
 */
export class MemoryRecallIndex implements RecallSink, Pick<RecallIndexStore, "entries" | "records"> {
  readonly #entries = new Map<string, RecallEntry[]>();
  readonly #records = new Map<string, RecallTurnDocument>();

  async add(record: RecallTurnDocument, entry: Pick<RecallEntry, "length" | "terms">): Promise<void> {
    const list = this.#entries.get(record.conversationId) ?? [];
    list.push({ turnId: record._id, turnNumber: record.turnNumber, at: record.at, length: entry.length, terms: entry.terms });
    this.#entries.set(record.conversationId, list);
    this.#records.set(record._id, record);
  }

  async entries(conversationId: string): Promise<RecallEntry[]> {
    return [...(this.#entries.get(conversationId) ?? [])];
  }

  async records(conversationId: string, turnIds: readonly string[]): Promise<RecallTurnDocument[]> {
    return turnIds.map((id) => this.#records.get(id)).filter((r): r is RecallTurnDocument => r?.conversationId === conversationId);
  }
}

/** Puts a case's conversation into the stores (artifacts in `database`, turns in `recall`) and returns its threads. */
export async function loadCase(database: ThreadwiseDatabase, c: SufficiencyCase, fillers: Fillers, recall: RecallSink = database.recall): Promise<LoadedCase> {
  const turns = resolveTurns(c, fillers);
  const conversationId = (await database.conversations.create(SUITE_OWNER))._id;
  const fence = await database.lease.acquire(conversationId, `${c.id}-load`);
  try {
    // Stored as the tool runner stores a successful output (`offloadToolOutput`, the product's options); a failed call's output stays inline.
    const thread = await messagesOf(turns, c, async (call, turn) =>
      call.status === "error"
        ? { content: call.output }
        : offloadToolOutput(
            call.output,
            { createdBy: SUITE_OWNER, turnId: `${conversationId}-${turn + 1}`, toolCallId: call.id, toolName: call.name, fence },
            { artifacts: database.artifacts },
          ),
    );
    const rawThread = await messagesOf(turns, c, async (call) => ({ content: call.output }));
    // Indexed as the after-turn hook indexes a finished turn: question, answer, each tool call with the
    // start of its output as the turn's last view showed it (an offloaded output as its notice).
    const start = Date.UTC(2026, 9, 1, 9);
    for (const [i, turn] of turns.entries()) {
      const tools = turn.steps.flat().map((call) => {
        const tokens = countTextTokens(call.output);
        const id = `t${i}-${call.id}`;
        const message = thread.find((m): m is ToolMessage => m.type === "tool" && (m as ToolMessage).tool_call_id === id);
        const artifact = message && offloadedArtifact(message);
        const shown = artifact
          ? toolOutputNotice({
              toolName: call.name,
              tokens,
              handle: artifact.handle,
              preview: artifact.preview,
              reason: "over-threshold",
              threshold: DEFAULT_OFFLOAD_TOKENS,
            })
          : call.output;
        return { name: call.name, args: JSON.stringify(call.args), content: shown };
      });
      const record: RecallTurnDocument = {
        _id: `${conversationId}-${i + 1}`,
        conversationId,
        turnNumber: i + 1,
        at: new Date(start + i * 600_000),
        status: "completed",
        question: turn.question,
        answer: turn.answer,
        tools: recallToolOutputs(tools),
      };
      const { terms, length } = recallEntryTerms(record);
      await recall.add(record, { length, terms }, fence);
    }
    return { case: c, conversationId, thread, rawThread, finishedTurns: turns.length, turns, readToolOutput: createReadToolOutputTool(database.artifacts) };
  } finally {
    await database.lease.release(fence);
  }
}
