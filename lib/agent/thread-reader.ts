import type { BaseMessage, ToolMessage } from "@langchain/core/messages";
import type { StateSnapshot } from "@langchain/langgraph";
import { offloadedArtifact } from "../model-view/tool-output-artifact.js";
import type { TurnArchiveStore } from "../store/turn-archive-store.js";
import { toViewMessages, type ViewMessage } from "../store/turn-record.js";
import type { AgentGraph } from "./graph.js";

/** One checkpointed message of a thread, in the shape of a recorded view message plus what only state has. */
export interface ThreadMessage extends ViewMessage {
  /** LangChain message id; a user message's is `${turnId}:user`. */
  id?: string;
  /** Tokens of the message as stored (an offloaded output counts as its preview). */
  tokens: number;
  /** Where an offloaded tool output lives; `content` is then its preview. */
  artifact?: { handle: string; bytes: number; tokens: number };
}

/** One checkpoint of a thread, read-only: its messages and where the graph stands. */
export interface ThreadSnapshot {
  messages: ThreadMessage[];
  /** Nodes to run next; empty at a turn's end. */
  next: string[];
  checkpointId: string;
  parentCheckpointId?: string;
  createdAt?: string;
  metadata: Record<string, unknown>;
  /** Pending tasks, with the interrupts they wait on (approvals). */
  tasks: { id: string; name: string; interrupts: { id?: string; value: unknown }[] }[];
}

/** Stored messages in the shape the API shows them. */
function threadMessages(messages: readonly BaseMessage[]): ThreadMessage[] {
  const records = toViewMessages(messages);
  return messages.map((message, i) => {
    const record: ThreadMessage = { ...records[i] };
    if (message.id) record.id = message.id;
    const artifact = message.getType() === "tool" ? offloadedArtifact(message as ToolMessage) : undefined;
    if (artifact) record.artifact = { handle: artifact.handle, bytes: artifact.bytes, tokens: artifact.tokens };
    return record;
  });
}

function threadSnapshot(snapshot: StateSnapshot): ThreadSnapshot {
  const parent = snapshot.parentConfig?.configurable?.checkpoint_id as string | undefined;
  return {
    messages: threadMessages((snapshot.values as { messages?: BaseMessage[] }).messages ?? []),
    next: [...snapshot.next],
    checkpointId: snapshot.config.configurable?.checkpoint_id as string,
    ...(parent !== undefined && { parentCheckpointId: parent }),
    ...(snapshot.createdAt !== undefined && { createdAt: snapshot.createdAt }),
    metadata: { ...(snapshot.metadata ?? {}) },
    tasks: snapshot.tasks.map((task) => ({ id: task.id, name: task.name, interrupts: task.interrupts.map((i) => ({ id: i.id, value: i.value })) })),
  };
}

/**
 * A conversation's thread read as the API shows it (the `/v1` thread and archive routes, the Agent
 * Protocol's state and history): read-only, outside any turn, so it takes no lease and writes nothing.
 */
export class ThreadReader {
  constructor(
    private readonly graph: Pick<AgentGraph, "getState" | "getStateHistory">,
    /** Where the graph archives finished turns out of the working set. Default: none (nothing archived). */
    private readonly archive?: Pick<TurnArchiveStore, "read">,
  ) {}

  /** The thread's checkpointed messages (durable state); empty for a thread with no checkpoint yet. */
  async readThread(conversationId: string): Promise<ThreadMessage[]> {
    return (await this.readWorkingSet(conversationId)).messages;
  }

  /** The thread's working set (its checkpointed messages) and how many finished turns before them were archived (`readArchive`). */
  async readWorkingSet(conversationId: string): Promise<{ messages: ThreadMessage[]; archivedTurns: number }> {
    const snapshot = await this.graph.getState({ configurable: { thread_id: conversationId } });
    const values = snapshot.values as { messages?: BaseMessage[]; archivedTurns?: number };
    return { messages: threadMessages(values.messages ?? []), archivedTurns: values.archivedTurns ?? 0 };
  }

  /** Archived turns numbered `from` to `to` (from 1), oldest first, each with its messages as the thread held them. */
  async readArchive(conversationId: string, from: number, to: number): Promise<{ turnNumber: number; messages: ThreadMessage[] }[]> {
    const turns = (await this.archive?.read(conversationId, from, to)) ?? [];
    return turns.map((turn) => ({ turnNumber: turn.turnNumber, messages: threadMessages(turn.messages) }));
  }

  /**
   * The thread's checkpoints, newest first, as LangGraph's `getStateHistory` reads them: what the
   * Agent Protocol's state and history routes serve. `before` is a checkpoint id.
   */
  async *readThreadHistory(conversationId: string, options: { limit?: number; before?: string } = {}): AsyncGenerator<ThreadSnapshot> {
    const before = options.before === undefined ? undefined : { configurable: { thread_id: conversationId, checkpoint_id: options.before } };
    for await (const snapshot of this.graph.getStateHistory({ configurable: { thread_id: conversationId } }, { limit: options.limit, before })) {
      yield threadSnapshot(snapshot);
    }
  }

  /** The thread's latest checkpoint as {@link readThreadHistory} gives it; undefined for a thread with no checkpoint yet. */
  async readThreadState(conversationId: string): Promise<ThreadSnapshot | undefined> {
    const snapshot = await this.graph.getState({ configurable: { thread_id: conversationId } });
    return snapshot.config.configurable?.checkpoint_id === undefined ? undefined : threadSnapshot(snapshot);
  }
}
