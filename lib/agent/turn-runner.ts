import { HumanMessage, RemoveMessage, type AIMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, INTERRUPT, isInterrupted } from "@langchain/langgraph";
import type { Caller, Owner } from "../auth/principal.js";
import type { ConversationStore } from "../store/conversation-store.js";
import { NotFoundError, StaleWriterError, TurnSupersededError } from "../errors.js";
import type { ConversationLease } from "../store/lease.js";
import type { MessageStore } from "../store/message-store.js";
import type { ThreadwiseSaver } from "../store/threadwise-saver.js";
import type { TurnArchiveStore } from "../store/turn-archive-store.js";
import type { ClaimedTurn, TurnDocument, TurnStore } from "../store/turn-store.js";
import { addUsage, summarizeContext, ZERO_USAGE, type TurnContextSummary, type Usage } from "../store/turn-record.js";
import type { WriteFence } from "../store/write-fence.js";
import { isMongoUnavailable } from "../store/mongo-unavailable.js";
import { retryWhileUnavailable } from "../store/retry-while-unavailable.js";
import { messageText } from "../model-view/message-text.js";
import { stampTokenCount } from "../model-view/token-counter.js";
import { type FinalEventBody, TURN_SUPERSEDED_EVENT, type TurnEvent } from "../events/turn-event-types.js";
import type { TurnEventRecorder } from "../events/turn-event-recorder.js";
import type { TurnEvents } from "../events/turn-events.js";
import type { FaultInjector } from "./fault-points.js";
import { TurnRecovery, type TurnRecoveryDeps } from "./turn-recovery.js";
import type { AgentGraph, TurnContext } from "./graph.js";
import type { TurnHold } from "../limits/turn-admission.js";
import type { ApprovalRequest, ApprovalResume, PendingCall } from "./approval-gate.js";
import { ApprovalPause, waitingCalls, type ApprovalPauseOptions, type WaitingApproval } from "./approval-pause.js";
import { conversationTitle } from "./conversation-title.js";
import type { EndOfTurn } from "./end-of-turn.js";
import { graphInput } from "./graph-input.js";
import { turnFailure } from "./turn-failure.js";
import { ThreadReader, type ThreadMessage, type ThreadSnapshot } from "./thread-reader.js";
import { TurnFork } from "./turn-fork.js";
import { TurnRecordWriter } from "./turn-record-writer.js";

export type { ThreadMessage, ThreadSnapshot, WaitingApproval };

/** Model calls allowed in one turn before it is stopped (each call is two graph steps). */
export const DEFAULT_MAX_MODEL_CALLS = 12;

export interface TurnRequest {
  conversationId: string;
  /** Who asks: tools check their permissions against this caller. */
  caller: Caller;
  /**
   * The workspace or tenant a channel's signed request came through (a Slack workspace, a Teams
   * tenant), whose threads its users continue (`AccessOptions.channel`). Default: none (an API turn).
   */
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

export interface TurnResult {
  turnId: string;
  /** `awaiting_approval`: the turn paused before calls a person must decide (`approvals`); `answer` is then empty. */
  status: "completed" | "awaiting_approval";
  approvals?: WaitingApproval[];
  answer: string;
  usage: Usage;
  context: TurnContextSummary;
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
  /** The last step of a completed turn, while it still holds the conversation: recall index, prune, retention. Default: none. */
  endOfTurn?: Pick<EndOfTurn, "run">;
  /** Default: {@link DEFAULT_MAX_MODEL_CALLS}. */
  maxModelCalls?: number;
  /** Test-only crash points; absent in production. */
  faults?: FaultInjector;
  /** What a tool call's idempotency record says, for the turns a new one finishes (docs/recovery.md). Default: no records. */
  toolCalls?: TurnRecoveryDeps["toolCalls"];
  /** Where each attempt's events go (docs/streaming.md). Default: none; the model is not streamed. */
  events?: TurnEvents;
  /** Where calls waiting for a person are recorded and their decisions read, and how long they wait. Required once a policy holds a tool. */
  approvals?: ApprovalPauseOptions;
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
  /** The thread as the API reads it, outside any turn. */
  private readonly threadReader: ThreadReader;
  private readonly approvalPause: ApprovalPause;
  private readonly fork: TurnFork;

  constructor(private readonly deps: TurnRunnerDeps) {
    this.maxModelCalls = deps.maxModelCalls ?? DEFAULT_MAX_MODEL_CALLS;
    this.recovery = new TurnRecovery(deps);
    this.threadReader = new ThreadReader(deps.graph, deps.archive);
    this.approvalPause = new ApprovalPause(deps.turns, deps.approvals);
    this.fork = new TurnFork(deps);
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
    // The one check (lib/auth/conversation-access.ts): the caller (owner, member or channel user) may write; the turn runs as the caller.
    await conversations.getFor(conversationId, caller, "write", { channel: request.owner });
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

  /** The thread's checkpointed messages (`ThreadReader.readThread`). */
  readThread(conversationId: string): Promise<ThreadMessage[]> {
    return this.threadReader.readThread(conversationId);
  }

  /** The thread's working set and how many turns were archived (`ThreadReader.readWorkingSet`). */
  readWorkingSet(conversationId: string): Promise<{ messages: ThreadMessage[]; archivedTurns: number }> {
    return this.threadReader.readWorkingSet(conversationId);
  }

  /** Archived turns numbered `from` to `to` (`ThreadReader.readArchive`). */
  readArchive(conversationId: string, from: number, to: number): Promise<{ turnNumber: number; messages: ThreadMessage[] }[]> {
    return this.threadReader.readArchive(conversationId, from, to);
  }

  /** The thread's checkpoints, newest first (`ThreadReader.readThreadHistory`). */
  readThreadHistory(conversationId: string, options: { limit?: number; before?: string } = {}): AsyncGenerator<ThreadSnapshot> {
    return this.threadReader.readThreadHistory(conversationId, options);
  }

  /** The thread's latest checkpoint (`ThreadReader.readThreadState`). */
  readThreadState(conversationId: string): Promise<ThreadSnapshot | undefined> {
    return this.threadReader.readThreadState(conversationId);
  }

  private async runHeld(request: TurnRequest, fence: WriteFence, lost: AbortSignal, started: number, end: AttemptEnd): Promise<TurnResult> {
    const { conversations, messages, turns, threads, faults } = this.deps;
    const { conversationId, turnId } = request;
    await threads.claimThread(conversationId, fence.epoch as number);
    // Refused before anything is written; a replacing turn that already began is past this check.
    if (request.replaces && (await turns.get(turnId))?.seq === undefined) await this.fork.assertReplaceable(conversationId, request.replaces);
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
      await this.fork.markReplacement(turn, fence);
      while (outcome.kind === "waiting") {
        const paused = await this.approvalPause.pause(turn, { requester: request.caller.principal, origin: request.origin }, outcome.calls, fence);
        if (paused) {
          // Ends this attempt's stream; the continuation, once decided, streams under the same turn (docs/streaming.md).
          end.final = { type: "approval_requested", approvals: paused.approvals.map(({ args: _args, context: _context, ...call }) => call) };
          return { turnId, status: "awaiting_approval", answer: "", ...paused };
        }
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
      await this.deps.endOfTurn?.run(conversationId, fence);
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
    const failure = turnFailure(error);
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
    if (!resumed && turn.replaces && !request.replaces) await this.fork.assertReplaceable(turn.conversationId, turn.replaces);
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

  /**
   * Starts the turn from its question, or continues it from the checkpoint when the thread's
   * latest question is already this turn's (`graphInput` decides which). A turn that has just
   * begun cannot be in the thread yet, so only a resumed one pays for loading the thread before
   * the graph loads it again.
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
    const questionId = `${request.turnId}:user`;
    const snapshot = readState ? await graph.getState({ configurable: thread }) : undefined;
    const at = snapshot && { messages: (snapshot.values as { messages?: BaseMessage[] }).messages ?? [], next: snapshot.next, waiting: waitingCalls(snapshot) };
    const decision = graphInput(at, questionId);
    let input: Command<ApprovalResume, Record<string, never>, never> | { messages: BaseMessage[] } | null;
    let checkpointId: string | undefined;
    switch (decision.kind) {
      case "superseded":
        await turns.supersede(turn, fence);
        throw new TurnSupersededError(`turn ${turn._id} is not the thread's latest question`, turn._id);
      case "answered":
        return { kind: "answer", answer: decision.answer };
      case "decisions": {
        const outcomes = await this.approvalPause.outcomesOf(turn._id, decision.calls);
        if (!outcomes) return { kind: "waiting", calls: decision.calls };
        input = new Command({ resume: { outcomes } });
        break;
      }
      case "continue":
        input = null;
        break;
      case "ask": {
        const fork = turn.replaces ? await this.fork.forkPoint(request.conversationId, turn.replaces) : undefined;
        checkpointId = fork?.checkpointId;
        const removed = (fork?.remove ?? []).map((id) => new RemoveMessage({ id }));
        const question = stampTokenCount(new HumanMessage({ content: request.content, id: questionId }));
        input = { messages: [...removed, ...decision.unanswered, question] };
      }
    }
    const context: TurnContext = {
      turnId: request.turnId,
      conversationId: request.conversationId,
      caller: request.caller,
      fence,
      maxModelCalls: this.maxModelCalls,
      record: new TurnRecordWriter(turns, turn, fence),
      events,
      ...(request.deadline && { deadline: request.deadline }),
    };
    // A deadline already past writes nothing: the graph would store its input (an edit's removals
    // included) before it looks at the signal, and the turn is requeued as if it never started.
    request.signal?.throwIfAborted();
    request.deadline?.throwIfAborted();
    const result = await graph.invoke(input, {
      configurable: { ...thread, fence_epoch: fence.epoch, ...(checkpointId ? { checkpoint_id: checkpointId } : {}) },
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
