import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage, type ToolMessage } from "@langchain/core/messages";
import { Command, INTERRUPT, isInterrupted, type StateSnapshot } from "@langchain/langgraph";
import type { Caller, Owner } from "../auth/principal.js";
import type { ConversationStore } from "../store/conversation-store.js";
import {
  BudgetExhaustedError,
  ContextBudgetExceededError,
  ModelCallFailedError,
  ModelCallLimitError,
  ModelCredentialsError,
  NotFoundError,
  RateLimitedError,
  NotLatestTurnError,
  StaleWriterError,
  TurnSupersededError,
} from "../errors.js";
import type { ConversationLease } from "../store/lease.js";
import type { MessageStore } from "../store/message-store.js";
import type { ThreadwiseSaver } from "../store/threadwise-saver.js";
import type { TurnArchiveStore } from "../store/turn-archive-store.js";
import type { ClaimedTurn, TurnDocument, TurnStore } from "../store/turn-store.js";
import { hasEnded, type TurnFailureCode } from "../store/turn-lifecycle.js";
import { addUsage, summarizeContext, toViewMessages, ZERO_USAGE, type TurnContextSummary, type Usage, type ViewMessage } from "../store/turn-record.js";
import type { WriteFence } from "../store/write-fence.js";
import { isMongoUnavailable } from "../store/mongo-unavailable.js";
import { retryWhileUnavailable } from "../store/retry-while-unavailable.js";
import { argsHash, type ApprovalContext, type ApprovalDocument, type ApprovalStore } from "../store/approval-store.js";
import { messageText } from "../model-view/message-text.js";
import { stampTokenCount } from "../model-view/token-counter.js";
import { offloadedArtifact } from "../model-view/tool-output-artifact.js";
import { type FinalEventBody, TURN_SUPERSEDED_EVENT, type TurnEvent } from "../events/turn-event-types.js";
import type { TurnEventRecorder } from "../events/turn-event-recorder.js";
import type { TurnEvents } from "../events/turn-events.js";
import type { FaultInjector } from "./fault-points.js";
import { TurnRecovery, type TurnRecoveryDeps } from "./turn-recovery.js";
import type { AgentGraph, TurnContext } from "./graph.js";
import type { TurnHold } from "../limits/turn-admission.js";
import { notRunMessage, type ApprovalOutcome, type ApprovalRequest, type ApprovalResume, type PendingCall } from "./approval-gate.js";
import { conversationTitle } from "./conversation-title.js";

/** Model calls allowed in one turn before it is stopped (each call is two graph steps). */
export const DEFAULT_MAX_MODEL_CALLS = 12;

export interface TurnRequest {
  conversationId: string;
  /** Who asks: tools check their permissions against this caller. */
  caller: Caller;
  /** Who owns the conversation, when not the caller (a Slack workspace, a Teams tenant). Default: the caller's principal. */
  owner?: Owner;
  content: string;
  turnId: string;
  /**
   * Aborts the attempt, a model call under way included (a request's hard limit); the turn is left
   * queued and resumes from its last checkpoint when run again.
   */
  signal?: AbortSignal;
  /**
   * Stops the graph between steps (the API's hand-off deadline): no model call or tool run starts
   * after it, and one under way finishes and is checkpointed, so the worker goes on from it rather
   * than paying for it again. The turn is left queued, unless that step ended it. Default: none.
   */
  deadline?: AbortSignal;
  /**
   * The conversation's latest finished turn, which this one replaces (an edited or regenerated
   * last question): the thread forks from the turn boundary before it, and the record marks it.
   */
  replaces?: string;
  /** Hears this attempt's events as they happen (a channel streaming the answer); must not block. */
  onEvent?: (event: TurnEvent) => void;
  /** How the turn is resumed once its waiting calls are decided (its queue job); kept with their approvals, and with the turn for recovery. */
  origin?: Record<string, unknown>;
  /** The attempt runs a queue delivery, which the queue delivers again if the attempt dies: recovery leaves the turn to it for a while (docs/recovery.md). */
  queueDelivery?: boolean;
  /**
   * Whether the caller runs the turn again after this error (the worker's queue job, retried while
   * the error is transient and receives are left): the attempt then leaves the turn `queued` and
   * ends no stream, so a `failed` turn is one nothing retries by itself. Default: nothing retries.
   */
  retries?: (error: unknown) => boolean;
  /**
   * The turn's admission (`TurnAdmission.run`), let go of with the conversation, before the final
   * event is told, unless the attempt stopped at its deadline for the worker. Default: none.
   */
  hold?: TurnHold;
}

/** A call the turn waits on, as a turn's result names it. */
export interface WaitingApproval {
  approvalId: string;
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  expiresAt: string;
  /** The calls and outputs of the turn that led to it, for the approver (`approvalContextOf`). */
  context?: ApprovalContext;
}

export interface TurnResult {
  turnId: string;
  /** `awaiting_approval`: the turn paused before calls a person must decide (`approvals`); `answer` is then empty. */
  status: "completed" | "awaiting_approval";
  approvals?: WaitingApproval[];
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

/** What the runner needs of the checkpointer beyond the graph: the thread's fence, and removing a deleted conversation's thread. */
export type ThreadFencing = Pick<ThreadwiseSaver, "claimThread" | "deleteThread">;

export interface TurnRunnerDeps {
  graph: AgentGraph;
  conversations: ConversationStore;
  messages: MessageStore;
  turns: TurnStore;
  lease: ConversationLease;
  threads: ThreadFencing;
  /** Where the graph archives finished turns out of the working set, for reading them back. Default: none (nothing archived). */
  archive?: Pick<TurnArchiveStore, "read">;
  /** Called after a completed turn, while it still holds the conversation (checkpoint pruning). */
  afterTurn?(conversationId: string, fence: WriteFence): Promise<void>;
  /** Default: {@link DEFAULT_MAX_MODEL_CALLS}. */
  maxModelCalls?: number;
  /** Test-only crash points; absent in production. */
  faults?: FaultInjector;
  /** What a tool call's idempotency record says, for the turns a new one finishes (docs/recovery.md). Default: no records. */
  toolCalls?: TurnRecoveryDeps["toolCalls"];
  /** Where each attempt's events go (docs/streaming.md). Default: none; the model is not streamed. */
  events?: TurnEvents;
  /** Where calls waiting for a person are recorded and their decisions read, and how long they wait. Required once a policy holds a tool. */
  approvals?: {
    store: ApprovalStore;
    ttlMs: number;
    /** A tool's arguments JSON Schema, kept on its approvals so an edit is checked without the tools (`ToolRegistry.argumentsSchema`). */
    argumentsSchema?(toolName: string): Record<string, unknown> | undefined;
  };
}

/** Every call of the thread's pending interrupts (a turn paused for approvals); empty when none is pending. */
function waitingCalls(snapshot: StateSnapshot): PendingCall[] {
  return snapshot.tasks.flatMap((task) => task.interrupts.flatMap((i) => (i.value as ApprovalRequest | undefined)?.approvals ?? []));
}

/** How a settled approval resumes its call; `by` names the person as the model reads it. */
function outcomeOf(approval: ApprovalDocument): ApprovalOutcome {
  const decision = approval.decision;
  if (!decision || decision.kind === "expire") return { kind: "expire", deadline: approval.deadline.toISOString() };
  const by = decision.by.subject;
  if (decision.kind === "edit") return { kind: "edit", by, args: decision.args };
  if (decision.kind === "reject") return { kind: "reject", by, ...(decision.reason !== undefined && { reason: decision.reason }) };
  return { kind: "approve", by };
}

/** How an attempt ended, told by the runner once the attempt has let go of the conversation. */
interface AttemptEnd {
  events?: TurnEventRecorder;
  final?: FinalEventBody;
  /** Records how the attempt ended, when the database was away as it ended: tried again before the conversation is given back. */
  settle?: () => Promise<void>;
  /** The attempt left its turn queued for the worker, which takes over its admission. */
  requeued?: boolean;
}

/** A failed turn's code (`TURN_FAILURE_CODES`, docs/api.md "Failure codes"), as the API's error body says it. */
function errorCode(error: unknown): TurnFailureCode {
  if (error instanceof ModelCallFailedError) return error.code;
  if (error instanceof ModelCallLimitError) return "model_call_limit";
  if (error instanceof ModelCredentialsError) return "model_credentials";
  if (error instanceof BudgetExhaustedError) return "budget_exhausted";
  if (error instanceof RateLimitedError) return "rate_limited";
  if (error instanceof ContextBudgetExceededError) return "context_budget_exceeded";
  if (isMongoUnavailable(error)) return "service_unavailable";
  return "internal_error";
}

/**
 * Runs one turn: lease, record, graph invocation (rehydrated from checkpoints), answer.
 *
 * Every acquisition of the lease has its own epoch: the turn claims the thread's checkpoints and
 * its turn record with it, and writes everything else through its fence, so an attempt that lost
 * the conversation (its lease lapsed under a frozen process, or the conversation was deleted)
 * writes nothing more and stops. A heartbeat renews the lease while the turn works.
 *
 * A retry with the same turn id resumes from the last checkpoint, as long as the turn is still
 * the conversation's latest; otherwise it ends as superseded, keeping its question.
 */
export class TurnRunner {
  private readonly maxModelCalls: number;
  /** Finishes, from the thread, the turns older attempts left running (docs/recovery.md). */
  private readonly recovery: TurnRecovery;

  constructor(private readonly deps: TurnRunnerDeps) {
    this.maxModelCalls = deps.maxModelCalls ?? DEFAULT_MAX_MODEL_CALLS;
    this.recovery = new TurnRecovery(deps);
  }

  /**
   * Records a turn handed to the worker as queued, unless the conversation is gone; a redelivery
   * finds the turn as it is. A conversation deleted meanwhile is NotFound, as for a running turn:
   * the same job would never find it again.
   */
  async accept(conversationId: string, turnId: string): Promise<void> {
    const fence = this.deps.lease.existing(conversationId);
    try {
      await this.deps.turns.enqueue(turnId, fence);
    } catch (error) {
      throw await this.explain(error, fence);
    }
  }

  async run(request: TurnRequest): Promise<TurnResult> {
    const { conversations, lease } = this.deps;
    const { conversationId, turnId, caller } = request;
    await conversations.getOwned(conversationId, request.owner ?? caller.principal);
    const started = Date.now();
    const fence = await lease.acquire(conversationId, turnId);
    const lost = new AbortController();
    const stopHeartbeat = lease.keepAlive(fence, () => lost.abort(fence.stale()));
    const end: AttemptEnd = {};
    try {
      return await this.runHeld(request, fence, lost.signal, started, end);
    } catch (error) {
      throw await this.explain(error, fence, lost.signal);
    } finally {
      stopHeartbeat();
      const released =
        !end.settle &&
        (await lease.release(fence).then(
          () => true,
          () => false,
        ));
      if (!end.requeued && !request.signal?.aborted) await request.hold?.release();
      // Told last: a client that acts on it finds the conversation free (docs/streaming.md).
      if (released) await this.tell(end, conversationId);
      else void this.endLater(fence, end);
    }
  }

  /**
   * An attempt that ended while the database was away: the turn is marked as its error says and
   * the lease given back in the background, as soon as the database answers again (a retry after
   * the API's Retry-After then takes the conversation), and no later than the lease would lapse by
   * itself; then its final event is told. A write refused for another reason (a later attempt has
   * the conversation) ends it.
   */
  private async endLater(fence: WriteFence, end: AttemptEnd): Promise<void> {
    const { lease } = this.deps;
    const outcome = await retryWhileUnavailable(
      async () => {
        await end.settle?.();
        end.settle = undefined;
        await lease.release(fence);
      },
      { untilMs: Date.now() + lease.ttlMs },
    );
    if (outcome.kind === "done") await this.tell(end, fence.conversationId);
  }

  private async tell(end: AttemptEnd, conversationId: string): Promise<void> {
    if (end.final) await end.events?.finish(end.final, this.deps.lease.existing(conversationId)).catch(() => undefined);
  }

  /** The thread's checkpointed messages (durable state), read-only; empty for a thread with no checkpoint yet. */
  async readThread(conversationId: string): Promise<ThreadMessage[]> {
    return (await this.readWorkingSet(conversationId)).messages;
  }

  /** The thread's working set (its checkpointed messages) and how many finished turns before them were archived (`readArchive`). */
  async readWorkingSet(conversationId: string): Promise<{ messages: ThreadMessage[]; archivedTurns: number }> {
    const snapshot = await this.deps.graph.getState({ configurable: { thread_id: conversationId } });
    const values = snapshot.values as { messages?: BaseMessage[]; archivedTurns?: number };
    return { messages: threadMessages(values.messages ?? []), archivedTurns: values.archivedTurns ?? 0 };
  }

  /** Archived turns numbered `from` to `to` (from 1), oldest first, each with its messages as the thread held them. */
  async readArchive(conversationId: string, from: number, to: number): Promise<{ turnNumber: number; messages: ThreadMessage[] }[]> {
    const turns = (await this.deps.archive?.read(conversationId, from, to)) ?? [];
    return turns.map((turn) => ({ turnNumber: turn.turnNumber, messages: threadMessages(turn.messages) }));
  }

  /**
   * The thread's checkpoints, newest first, as LangGraph's `getStateHistory` reads them (read-only):
   * what the Agent Protocol's state and history routes serve. `before` is a checkpoint id.
   */
  async *readThreadHistory(conversationId: string, options: { limit?: number; before?: string } = {}): AsyncGenerator<ThreadSnapshot> {
    const before = options.before === undefined ? undefined : { configurable: { thread_id: conversationId, checkpoint_id: options.before } };
    for await (const snapshot of this.deps.graph.getStateHistory({ configurable: { thread_id: conversationId } }, { limit: options.limit, before })) {
      yield threadSnapshot(snapshot);
    }
  }

  /** The thread's latest checkpoint as {@link readThreadHistory} gives it; undefined for a thread with no checkpoint yet. */
  async readThreadState(conversationId: string): Promise<ThreadSnapshot | undefined> {
    const snapshot = await this.deps.graph.getState({ configurable: { thread_id: conversationId } });
    return snapshot.config.configurable?.checkpoint_id === undefined ? undefined : threadSnapshot(snapshot);
  }

  private async runHeld(request: TurnRequest, fence: WriteFence, lost: AbortSignal, started: number, end: AttemptEnd): Promise<TurnResult> {
    const { conversations, messages, turns, threads, faults } = this.deps;
    const { conversationId, turnId } = request;
    await threads.claimThread(conversationId, fence.epoch as number);
    // Refused before anything is written; a replacing turn that already began is past this check.
    if (request.replaces && (await turns.get(turnId))?.seq === undefined) await this.assertReplaceable(conversationId, request.replaces);
    const claim = await turns.claim(turnId, fence, {
      ...(request.replaces && { replaces: request.replaces }),
      ...(request.origin && { origin: request.origin }),
    });
    if (!claim.claimed) return this.finished(claim.turn, fence);
    const turn = claim.turn;
    let events: TurnEventRecorder | undefined;
    try {
      events = end.events = await this.deps.events?.record(turnId, fence, request.onEvent);
      await this.recovery.finishOthers(turn, fence);
      const { seq, resumed, closed } = await this.enter(turn, request, fence);
      faults?.at("after-user-message");
      let outcome = await this.invokeGraph(request, turn, fence, lost, resumed || closed, events);
      // Only now is the replacing branch in the thread: a turn stopped or superseded before it leaves the replaced one unmarked.
      await this.markReplacement(turn, fence);
      while (outcome.kind === "waiting") {
        const paused = await this.awaitApproval(turn, request, outcome.calls, fence, end);
        if (paused) return paused;
        // Every call was decided while the turn was being paused: this attempt goes on (docs/approvals.md, "How a turn waits").
        await turns.resumeDecided(turn, fence);
        outcome = await this.invokeGraph(request, turn, fence, lost, true, events);
      }
      const answerMessage = outcome.answer;
      faults?.at("after-answer");
      const answer = messageText(answerMessage.content);
      const calls = await turns.listCalls(turnId);
      const usage = calls.reduce((u, c) => addUsage(u, c.usage), ZERO_USAGE);
      const toolCalls = calls.reduce((n, c) => n + c.toolCalls.length, 0);
      // The record first: a process killed between the two leaves a `running` turn, which recovery completes from the
      // thread (the record's insert is once), never a `completed` turn that nothing revisits with its answer missing.
      await messages.append({ turnId, seq, role: "assistant", content: answer }, fence);
      faults?.at("after-record-answer");
      await turns.complete(turn, { answer, usage, toolCalls, durationMs: Date.now() - started }, fence);
      faults?.at("after-record");
      await conversations.touch(conversationId, { title: conversationTitle(request.content) });
      await this.deps.afterTurn?.(conversationId, fence);
      // A follower that misses this event reads the answer from the turn record instead.
      end.final = { type: "done", answer, usage };
      return { turnId, status: "completed", answer, usage, context: summarizeContext(calls) };
    } catch (error) {
      const settle = () => this.settle(turn, fence, error, request, lost, end);
      await settle().catch((unwritten: unknown) => {
        if (isMongoUnavailable(unwritten)) end.settle = settle;
      });
      throw error;
    }
  }

  /**
   * The graph paused before calls a person must decide: their approvals are recorded (a retried
   * attempt's are already there and keep their decisions), and the turn waits. Nothing of the
   * calls has run. Undefined when none waits any longer once the turn is marked waiting: the
   * caller goes on with the turn.
   */
  private async awaitApproval(
    turn: ClaimedTurn,
    request: TurnRequest,
    calls: PendingCall[],
    fence: WriteFence,
    end: AttemptEnd,
  ): Promise<TurnResult | undefined> {
    const { approvals, turns } = this.deps;
    if (!approvals) throw new TypeError("a turn paused for approval, but the runner has no approval store");
    const now = new Date();
    const deadline = new Date(now.getTime() + approvals.ttlMs);
    const docs: ApprovalDocument[] = calls.map((call) => {
      const schema = approvals.argumentsSchema?.(call.tool);
      return {
        _id: call.approvalId,
        conversationId: turn.conversationId,
        turnId: turn._id,
        toolCallId: call.toolCallId,
        tool: call.tool,
        args: call.args,
        argsHash: argsHash(call.args),
        ...(schema && { argsSchema: JSON.stringify(schema) }),
        requester: request.caller.principal,
        approvers: call.approvers,
        ...(call.context && { context: call.context }),
        createdAt: now,
        deadline,
        status: "pending",
        ...(request.origin && { origin: request.origin }),
      };
    });
    await approvals.store.open(docs, fence);
    await turns.awaitApproval(turn, [...new Set(calls.map((c) => c.tool))], fence);
    // Read after that write: a decision between the two writes found the turn running and handed nothing on, so it is
    // this attempt's to go on; one after it also hands the turn on, and that job finds the turn taken or finished.
    const records = new Map((await approvals.store.listByTurn(turn._id)).map((a) => [a._id, a]));
    // In the order of the model's calls; those decided already (a retried attempt) are not waited on.
    const waiting = calls.flatMap((c) => records.get(c.approvalId) ?? []).filter((a) => a.status === "pending");
    if (waiting.length === 0) return undefined;
    const modelCalls = await turns.listCalls(turn._id);
    const approvalsWaiting = waiting.map((a) => ({
      approvalId: a._id,
      toolCallId: a.toolCallId,
      tool: a.tool,
      args: a.args,
      expiresAt: a.deadline.toISOString(),
      ...(a.context && { context: a.context }),
    }));
    // Ends this attempt's stream; the continuation, once decided, streams under the same turn (docs/streaming.md).
    end.final = { type: "approval_requested", approvals: approvalsWaiting.map(({ args: _args, context: _context, ...call }) => call) };
    return {
      turnId: turn._id,
      status: "awaiting_approval",
      approvals: approvalsWaiting,
      answer: "",
      usage: modelCalls.reduce((u, c) => addUsage(u, c.usage), ZERO_USAGE),
      context: summarizeContext(modelCalls),
    };
  }

  /**
   * The outcome of each waiting call once none is pending (approvals past their deadline are
   * expired first); undefined while one still waits, or before the approvals are recorded.
   */
  private async outcomesOf(turnId: string, calls: PendingCall[]): Promise<Record<string, ApprovalOutcome> | undefined> {
    const store = this.deps.approvals?.store;
    if (!store) return undefined;
    await store.expireDue({ turnId });
    const records = new Map((await store.listByTurn(turnId)).map((a) => [a._id, a]));
    const outcomes: Record<string, ApprovalOutcome> = {};
    for (const call of calls) {
      const record = records.get(call.approvalId);
      if (!record || record.status === "pending") return undefined;
      outcomes[call.approvalId] = outcomeOf(record);
    }
    return outcomes;
  }

  /**
   * Records how the attempt ended, when it still may: stopped at the caller's deadline, or failed
   * on an error its caller retries (`retries`), the turn waits for the worker; any other error
   * fails it, with its code. A superseded or fenced-out attempt writes nothing.
   */
  private async settle(
    turn: ClaimedTurn,
    fence: WriteFence,
    error: unknown,
    request: Pick<TurnRequest, "signal" | "deadline" | "retries">,
    lost: AbortSignal,
    end: AttemptEnd,
  ): Promise<void> {
    if (error instanceof StaleWriterError || lost.aborted) return;
    if (error instanceof TurnSupersededError) {
      end.final = TURN_SUPERSEDED_EVENT;
      return;
    }
    // Stopped at the deadline, or failed on an error its job is retried after: the turn waits for the worker, its stream open.
    if (request.signal?.aborted || request.deadline?.aborted || request.retries?.(error)) {
      await this.deps.turns.requeue(turn, fence);
      end.requeued = true;
      return;
    }
    // A limit reached between model calls says which, and when it resets (docs/limits.md); a model failure says why.
    const limited = error instanceof BudgetExhaustedError || error instanceof RateLimitedError;
    const message = limited
      ? error.message
      : error instanceof ModelCallFailedError
        ? `the turn failed: ${error.reason}`
        : isMongoUnavailable(error)
          ? "the turn failed: the database was unreachable"
          : "the turn failed";
    const failure = { code: errorCode(error), message };
    await this.deps.turns.fail(turn, failure, fence);
    end.final = { type: "failed", ...failure };
  }

  /**
   * An error of an attempt that lost its fence says so. One whose conversation was deleted
   * meanwhile is NotFound, and the thread is deleted again: a claim that raced the deletion may
   * have left the thread's fence behind.
   */
  private async explain(error: unknown, fence: WriteFence, lost?: AbortSignal): Promise<unknown> {
    const stale = error instanceof StaleWriterError ? error : lost?.aborted ? fence.stale(error) : undefined;
    if (!stale) return error;
    const exists = await this.deps.conversations.get(fence.conversationId).catch(() => undefined);
    if (exists !== null) return stale;
    await this.deps.threads.deleteThread(fence.conversationId).catch(() => undefined);
    return new NotFoundError(`conversation ${fence.conversationId} was deleted`, { cause: stale });
  }

  /** A final turn run again: a completed one answers as it did (its record repaired if the first attempt died before it), a superseded one refuses. */
  private async finished(turn: TurnDocument, fence: WriteFence): Promise<TurnResult> {
    if (turn.status === "superseded") throw new TurnSupersededError(`turn ${turn._id} was superseded by a later turn`, turn._id);
    if (turn.seq !== undefined) {
      await this.deps.messages.append({ turnId: turn._id, seq: turn.seq, role: "assistant", content: turn.answer ?? "" }, fence);
    }
    const calls = await this.deps.turns.listCalls(turn._id);
    return { turnId: turn._id, status: "completed", answer: turn.answer ?? "", usage: turn.usage, context: summarizeContext(calls) };
  }

  /**
   * Puts the turn's question in the record: a new turn begins under this attempt's epoch, which
   * makes it the conversation's latest; a turn begun by an earlier attempt is resumed only while
   * no later turn began.
   */
  private async enter(turn: ClaimedTurn, request: TurnRequest, fence: WriteFence): Promise<{ seq: number; resumed: boolean; closed: boolean }> {
    const { turns, messages } = this.deps;
    const resumed = turn.seq !== undefined;
    // A replacing turn that the worker took over before it began is checked here, as the request was.
    if (!resumed && turn.replaces && !request.replaces) await this.assertReplaceable(turn.conversationId, turn.replaces);
    const seq = turn.seq ?? (await turns.begin(turn, fence, request.caller.principal));
    turn.seq = seq;
    await messages.append({ turnId: turn._id, seq, role: "user", content: request.content }, fence);
    if (await turns.hasLaterTurn(turn.conversationId, seq)) {
      await turns.supersede(turn, fence);
      throw new TurnSupersededError(`turn ${turn._id} was superseded by a later turn`, turn._id);
    }
    if (resumed) return { seq, resumed, closed: false };
    // A newer question ends an earlier turn still waiting for approvals: its calls never run (those decided but not resumed yet
    // included), and a late decision is refused. Approvals first: a crash between leaves a turn that resumes to be superseded.
    const unresumed = await turns.awaitingBefore(turn.conversationId, seq);
    const closedApprovals = (await this.deps.approvals?.store.supersedeOthers(turn.conversationId, turn._id, unresumed)) ?? 0;
    // None waiting (almost every turn): no write. None can start waiting meanwhile, since this turn holds the conversation's lease.
    const closedTurns = unresumed.length === 0 ? 0 : await turns.supersedeAwaiting(turn.conversationId, seq);
    return { seq, resumed, closed: closedApprovals + closedTurns > 0 };
  }

  /** Marks the turn this one replaces, in the record and on its turn (idempotent: a resumed turn marks again). */
  private async markReplacement(turn: ClaimedTurn, fence: WriteFence): Promise<void> {
    if (!turn.replaces) return;
    await this.deps.messages.markReplaced(turn.replaces, turn._id, fence);
    await this.deps.turns.markReplaced(turn.replaces, turn, fence);
  }

  /** Only the latest begun turn, once finished, can be replaced; checked under the lease, so no turn begins meanwhile. */
  private async assertReplaceable(conversationId: string, turnId: string): Promise<void> {
    const latest = await this.deps.turns.latest(conversationId);
    if (latest?._id !== turnId || !hasEnded(latest.status)) {
      throw new NotLatestTurnError(`turn ${turnId} is not the conversation's latest finished turn`, turnId);
    }
  }

  /**
   * Where a replacing turn starts: the newest checkpoint holding exactly the thread's messages
   * before the replaced question (the turn boundary before it: the replaced turn's first
   * checkpoint, which prune keeps, or the previous turn's end), so the original branch is left as
   * it was. Without such a checkpoint (a thread pruned before turn boundaries were kept) it starts
   * from the latest checkpoint and removes the replaced turn's messages, which older checkpoints
   * still hold.
   */
  private async forkPoint(conversationId: string, replaced: string): Promise<{ checkpointId?: string; remove: string[] }> {
    const { graph } = this.deps;
    const head = await graph.getState({ configurable: { thread_id: conversationId } });
    const headIds = ((head.values as { messages?: BaseMessage[] }).messages ?? []).map((m) => m.id ?? "");
    const at = headIds.indexOf(`${replaced}:user`);
    const before = at < 0 ? headIds : headIds.slice(0, at);
    for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: conversationId } })) {
      const ids = ((snapshot.values as { messages?: BaseMessage[] }).messages ?? []).map((m) => m.id ?? "");
      // A turn's first checkpoint (source "input") still has the question it began with pending; a run with new input discards it.
      const boundary = snapshot.next.length === 0 || snapshot.metadata?.source === "input";
      // The replaced turn may have archived older turns first: its boundary holds them before the same messages.
      const from = ids.length - before.length;
      if (boundary && from >= 0 && (before.length > 0 || from === 0) && before.every((id, i) => id === ids[from + i])) {
        return { checkpointId: snapshot.config.configurable?.checkpoint_id as string, remove: [] };
      }
    }
    return { checkpointId: head.config.configurable?.checkpoint_id as string | undefined, remove: at < 0 ? [] : headIds.slice(at) };
  }

  /**
   * Starts the turn from its question, or continues it from the checkpoint when the thread's
   * latest question is already this turn's. A turn that has just begun cannot be in the thread
   * yet, so only a resumed one pays for loading the thread before the graph loads it again.
   */
  private async invokeGraph(
    request: TurnRequest,
    turn: ClaimedTurn,
    fence: WriteFence,
    lost: AbortSignal,
    readState: boolean,
    events: TurnEventRecorder | undefined,
  ): Promise<{ kind: "answer"; answer: AIMessage } | { kind: "waiting"; calls: PendingCall[] }> {
    const { graph, turns } = this.deps;
    const thread = { thread_id: request.conversationId };
    const userMessageId = `${request.turnId}:user`;
    let started = false;
    let resume: Command<ApprovalResume, Record<string, never>, never> | undefined;
    let unanswered: ToolMessage[] = [];
    if (readState) {
      const snapshot = await graph.getState({ configurable: thread });
      const stateMessages = (snapshot.values as { messages?: BaseMessage[] }).messages ?? [];
      const lastQuestion = stateMessages.findLast((m) => m.getType() === "human");
      started = lastQuestion?.id === userMessageId;
      if (!started && stateMessages.some((m) => m.id === userMessageId)) {
        await turns.supersede(turn, fence);
        throw new TurnSupersededError(`turn ${turn._id} is not the thread's latest question`, turn._id);
      }
      const last = stateMessages[stateMessages.length - 1];
      if (started && snapshot.next.length === 0 && last instanceof AIMessage && !last.tool_calls?.length) return { kind: "answer", answer: last };
      const waiting = waitingCalls(snapshot);
      if (started && waiting.length > 0) {
        const outcomes = await this.outcomesOf(turn._id, waiting);
        if (!outcomes) return { kind: "waiting", calls: waiting };
        resume = new Command({ resume: { outcomes } });
      } else if (!started && waiting.length > 0 && last instanceof AIMessage) {
        // An earlier turn paused for approvals and a new question came: its calls are answered as not run, so no call is left unanswered.
        unanswered = (last.tool_calls ?? []).map((c) =>
          notRunMessage({ id: c.id ?? "", name: c.name }, { kind: "reject", by: "nobody", reason: "a new question came first" }),
        );
      }
    }
    const context: TurnContext = {
      turnId: request.turnId,
      conversationId: request.conversationId,
      caller: request.caller,
      fence,
      maxModelCalls: this.maxModelCalls,
      recordModelCall: (record) => turns.recordModelCall(turn, record, fence),
      onProgress: (progress) => turns.setProgress(turn, progress, fence),
      events,
      ...(request.deadline && { deadline: request.deadline }),
    };
    const question = stampTokenCount(new HumanMessage({ content: request.content, id: userMessageId }));
    const fork = !started && turn.replaces ? await this.forkPoint(request.conversationId, turn.replaces) : undefined;
    const removed = (fork?.remove ?? []).map((id) => new RemoveMessage({ id }));
    const input = resume ?? (started ? null : { messages: [...removed, ...unanswered, question] });
    // A deadline already past writes nothing: the graph would store its input (an edit's removals
    // included) before it looks at the signal, and the turn is requeued as if it never started.
    request.signal?.throwIfAborted();
    request.deadline?.throwIfAborted();
    const result = await graph.invoke(input, {
      configurable: { ...thread, fence_epoch: fence.epoch, ...(fork?.checkpointId ? { checkpoint_id: fork.checkpointId } : {}) },
      signal: request.signal ? AbortSignal.any([request.signal, lost]) : lost,
      context,
      durability: "sync",
      // The model-call cap is enforced by the agent node, from state; this only stops a runaway graph.
      recursionLimit: this.maxModelCalls * 2 + 3,
    });
    if (isInterrupted<ApprovalRequest>(result)) return { kind: "waiting", calls: result[INTERRUPT].flatMap((i) => i.value?.approvals ?? []) };
    const finalMessages = (result as { messages: BaseMessage[] }).messages;
    return { kind: "answer", answer: finalMessages[finalMessages.length - 1] as AIMessage };
  }
}
