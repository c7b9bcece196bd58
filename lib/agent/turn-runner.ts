import { AIMessage, HumanMessage, type BaseMessage, type ToolMessage } from "@langchain/core/messages";
import type { Caller, Owner } from "../auth/principal.js";
import type { ConversationStore } from "../store/conversation-store.js";
import type { ConversationLease } from "../store/lease.js";
import type { MessageStore } from "../store/message-store.js";
import { addUsage, ZERO_USAGE, type ModelCallRecord, type TurnDocument, type TurnStore, type Usage, type ViewMessage } from "../store/turn-store.js";
import { countMessageTokens, stampTokenCount } from "../model-view/token-counter.js";
import { offloadedArtifact } from "../model-view/tool-output-artifact.js";
import type { ModelViewStats } from "../model-view/types.js";
import { randomUUID } from "node:crypto";
import type { FaultInjector } from "./fault-points.js";
import type { AgentGraph, TurnContext } from "./graph.js";
import { toViewMessages } from "./view-record.js";

/** Model calls allowed in one turn before it is stopped (each call is two graph steps). */
export const DEFAULT_MAX_MODEL_CALLS = 12;
/** Characters of the first question kept as a conversation's title. */
const TITLE_CHARS = 80;

export interface TurnRequest {
  conversationId: string;
  /** Who asks: tools check their permissions against this caller. */
  caller: Caller;
  /** Who owns the conversation, when not the caller (a Slack workspace, a Teams tenant). Default: the caller's principal. */
  owner?: Owner;
  content: string;
  turnId: string;
  /** Stops the graph between steps (a deadline); the turn resumes from its last checkpoint when run again. */
  signal?: AbortSignal;
}

/** The context figures of a turn: the last model call's view against the full state. */
export interface TurnContextSummary {
  modelCalls: number;
  stateTokens: number;
  viewTokens: number;
  budget: number;
  finishedTurnsKept: number;
  omittedOutputs: number;
}

export interface TurnResult {
  turnId: string;
  answer: string;
  usage: Usage;
  context: TurnContextSummary;
}

/** One checkpointed message of a thread, in the shape of a recorded view message plus what only state has. */
export interface ThreadMessage extends ViewMessage {
  /** LangChain message id; a user message's is `${turnId}:user`. */
  id?: string;
  /** Tokens of the message as stored (an offloaded output counts as its preview). */
  tokens: number;
  /** Where an offloaded tool output lives; `content` is then its preview. */
  artifact?: { handle: string; bytes: number; tokens: number };
}

export interface TurnRunnerDeps {
  graph: AgentGraph;
  conversations: ConversationStore;
  messages: MessageStore;
  turns: TurnStore;
  lease: ConversationLease;
  /** Called after a completed turn (checkpoint pruning). */
  afterTurn?(conversationId: string): Promise<void>;
  maxModelCalls?: number;
  /** Test-only crash points; absent in production. */
  faults?: FaultInjector;
}

function textOf(message: BaseMessage): string {
  return typeof message.content === "string"
    ? message.content
    : message.content.map((b) => ("text" in b && typeof b.text === "string" ? b.text : "")).join("");
}

export function summarizeContext(calls: ModelCallRecord[]): TurnContextSummary {
  const last: ModelViewStats | undefined = calls[calls.length - 1]?.stats;
  return {
    modelCalls: calls.length,
    stateTokens: last?.stateTokens ?? 0,
    viewTokens: last?.viewTokens ?? 0,
    budget: last?.budget ?? 0,
    finishedTurnsKept: last?.finishedTurnsKept ?? 0,
    omittedOutputs: calls.reduce((n, c) => n + c.stats.omittedOutputs.length, 0),
  };
}

/**
 * Runs one turn: lease, record, graph invocation (rehydrated from checkpoints), answer.
 * A retry with the same turn id resumes from the last checkpoint instead of starting over.
 */
export class TurnRunner {
  private readonly maxModelCalls: number;

  constructor(private readonly deps: TurnRunnerDeps) {
    this.maxModelCalls = deps.maxModelCalls ?? DEFAULT_MAX_MODEL_CALLS;
  }

  async run(request: TurnRequest): Promise<TurnResult> {
    const { conversations, messages, turns, lease } = this.deps;
    const { conversationId, turnId, caller } = request;
    await conversations.getOwned(conversationId, request.owner ?? caller.principal);
    const started = Date.now();
    // Per attempt, so a retry of the same turn waits while the first attempt is alive.
    const holder = `${turnId}:${randomUUID()}`;
    await lease.acquire(conversationId, holder);
    const faults = this.deps.faults;
    try {
      await turns.failInterrupted(conversationId, turnId);
      const { turn, created } = await turns.start(turnId, conversationId);
      if (turn.status === "completed") return this.resultOf(turn, await turns.listCalls(turnId));
      await turns.markRunning(turnId);
      await messages.append({ conversationId, turnId, role: "user", content: request.content });
      faults?.at("after-user-message");
      const answerMessage = await this.invokeGraph(request, holder, created);
      faults?.at("after-answer");
      const answer = textOf(answerMessage);
      await messages.append({ conversationId, turnId, role: "assistant", content: answer });
      faults?.at("after-record");
      const calls = await turns.listCalls(turnId);
      const usage = calls.reduce((u, c) => addUsage(u, c.usage), ZERO_USAGE);
      const toolCalls = calls.reduce((n, c) => n + c.toolCalls.length, 0);
      await turns.complete(turnId, { answer, usage, toolCalls, durationMs: Date.now() - started });
      await conversations.touch(conversationId, { title: request.content.slice(0, TITLE_CHARS) });
      await this.deps.afterTurn?.(conversationId);
      return { turnId, answer, usage, context: summarizeContext(calls) };
    } catch (error) {
      await turns.fail(turnId, { code: error instanceof Error ? error.name : "Error", message: "the turn failed" }).catch(() => undefined);
      throw error;
    } finally {
      await lease.release(conversationId, holder).catch(() => undefined);
    }
  }

  /** The thread's checkpointed messages (durable state), read-only; empty for a thread with no checkpoint yet. */
  async readThread(conversationId: string): Promise<ThreadMessage[]> {
    const snapshot = await this.deps.graph.getState({ configurable: { thread_id: conversationId } });
    const messages = (snapshot.values as { messages?: BaseMessage[] }).messages ?? [];
    const records = toViewMessages(messages);
    return messages.map((message, i) => {
      const record: ThreadMessage = { ...records[i], tokens: countMessageTokens(message) };
      if (message.id) record.id = message.id;
      const artifact = message.getType() === "tool" ? offloadedArtifact(message as ToolMessage) : undefined;
      if (artifact) record.artifact = { handle: artifact.handle, bytes: artifact.bytes, tokens: artifact.tokens };
      return record;
    });
  }

  private resultOf(turn: TurnDocument, calls: ModelCallRecord[]): TurnResult {
    return { turnId: turn._id, answer: turn.answer ?? "", usage: turn.usage, context: summarizeContext(calls) };
  }

  /**
   * Starts the turn, or resumes it when the checkpoint already holds its user message. A turn
   * whose record was just created cannot be in the checkpoint yet, so only a retried or queued
   * turn pays for loading the thread before the graph loads it again.
   */
  private async invokeGraph(request: TurnRequest, holder: string, newTurn: boolean): Promise<AIMessage> {
    const { graph, turns, lease } = this.deps;
    const config = { configurable: { thread_id: request.conversationId } };
    const userMessageId = `${request.turnId}:user`;
    let alreadyStarted = false;
    if (!newTurn) {
      const snapshot = await graph.getState(config);
      const stateMessages = (snapshot.values as { messages?: BaseMessage[] }).messages ?? [];
      alreadyStarted = stateMessages.some((m) => m.id === userMessageId);
      const last = stateMessages[stateMessages.length - 1];
      if (alreadyStarted && snapshot.next.length === 0 && last instanceof AIMessage && !last.tool_calls?.length) return last;
    }
    const context: TurnContext = {
      turnId: request.turnId,
      conversationId: request.conversationId,
      caller: request.caller,
      recordModelCall: async (record) => {
        await turns.recordModelCall(request.conversationId, record);
        // Each model call renews the lease, so a long turn keeps it and a dead one loses it.
        await lease.acquire(request.conversationId, holder);
      },
      onProgress: (progress) => turns.setProgress(request.turnId, progress),
    };
    const input = alreadyStarted ? null : { messages: [stampTokenCount(new HumanMessage({ content: request.content, id: userMessageId }))] };
    const result = await graph.invoke(input, {
      ...config,
      signal: request.signal,
      context,
      durability: "sync",
      recursionLimit: this.maxModelCalls * 2 + 1,
    });
    const finalMessages = (result as { messages: BaseMessage[] }).messages;
    return finalMessages[finalMessages.length - 1] as AIMessage;
  }
}
