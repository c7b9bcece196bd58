import { isFinalEvent, type FinalEventBody, type TurnEvent } from "../events/turn-event-types.js";
import type { Caller } from "../auth/principal.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import { hasEnded } from "../store/turn-lifecycle.js";
import {
  ProtocolStreamEncoder,
  protocolFrame,
  protocolMessages,
  snapshotSeenBy,
  stateValues,
  type ProtocolInterrupt,
  type streamModesOf,
} from "./agent-protocol.js";
import { readAccessWatch, type ApiRoutesDeps } from "./api-routes.js";
import { errorResponse } from "./error-response.js";
import type { HttpResponse } from "./http.js";

/** How often a run whose calls were all decided looks for its continuation, and for how long. */
const RESUME_POLL_MS = 200;
const RESUME_WAIT_MS = 120_000;

/** How a run's turn ended, for its answer or its stream's last frames. */
export interface RunEnd {
  final: FinalEventBody | undefined;
}

/** What following a run needs: the turn and approval stores, the thread's state, the turn's events. */
export type RunEventsDeps = Pick<ApiRoutesDeps, "database" | "runner" | "events">;

/** `Content-Location` of a run's answers: the run it is. */
export const runHeaders = (threadId: string, runId: string) => ({ "content-location": `/threads/${threadId}/runs/${runId}` });

/**
 * A run's events as the protocol gives them: followed to the run's end (past decided approvals),
 * awaited for `runs.wait` and `join`, or streamed as the protocol's server-sent events.
 */
export function runEvents(deps: RunEventsDeps) {
  const { database, runner } = deps;
  const { turns } = database;

  /**
   * The run's events, to its end: the turn's final event, or an `approval_requested` while a call
   * still waits for a person. Once every call is decided the turn waits for its queue job, whose
   * continuation follows under the same id; until the job takes it, the follower has nothing to
   * follow, so this looks again every {@link RESUME_POLL_MS}, for at most {@link RESUME_WAIT_MS}.
   */
  async function* followRun(turnId: string, afterId: number, signal: AbortSignal): AsyncGenerator<TurnEvent> {
    let after = afterId;
    const giveUpAt = Date.now() + RESUME_WAIT_MS;
    for (;;) {
      let final: FinalEventBody | undefined;
      for await (const event of deps.events.follow(turnId, after, signal)) {
        after = event.id;
        yield event;
        if (isFinalEvent(event)) {
          final = event;
          break;
        }
      }
      if (signal.aborted || (final && final.type !== "approval_requested")) return;
      const turn = await turns.get(turnId);
      if (!turn || hasEnded(turn.status)) return;
      if ((await stillWaiting(turnId)) || Date.now() > giveUpAt) return;
      await new Promise((resolve) => setTimeout(resolve, RESUME_POLL_MS));
    }
  }

  const awaitEnd = async (turnId: string, afterId: number): Promise<RunEnd> => {
    let final: FinalEventBody | undefined;
    for await (const event of followRun(turnId, afterId, new AbortController().signal)) if (isFinalEvent(event)) final = event;
    return { final };
  };

  /** Whether the turn waits on a person: paused with a call still undecided (decided ones are about to resume it). */
  const stillWaiting = async (turnId: string): Promise<boolean> => {
    if ((await turns.get(turnId))?.status !== "awaiting_approval") return false;
    const now = Date.now();
    return (await database.approvals.listByTurn(turnId)).some((a) => a.status === "pending" && a.deadline.getTime() > now);
  };

  /** The run's result as `runs.wait` and `join` give it: the state's values, with `__interrupt__` or `__error__`. */
  const resultOf = async (threadId: string, end: RunEnd, viewer: Caller) => {
    const values = stateValues(snapshotSeenBy(await runner.readThreadState(threadId), viewer));
    if (end.final?.type === "failed") values.__error__ = { error: end.final.code, message: end.final.message };
    return values;
  };

  /** A run's events as the protocol's server-sent events, for the modes asked; `running` is the request's own part of it. */
  const runStream = (
    caller: Caller,
    thread: ConversationDocument,
    run: { turnId: string; afterId: number; running?: Promise<unknown> },
    modes: ReturnType<typeof streamModesOf>,
  ): HttpResponse => {
    // A member removed while following is sent nothing more of the thread (docs/api.md, "Members").
    const stillAllowed = readAccessWatch(database.conversations, caller, thread);
    const encoder = new ProtocolStreamEncoder(modes, { runId: run.turnId, threadId: thread._id });
    let failure: unknown;
    const failed = new AbortController();
    run.running?.catch((error: unknown) => {
      failure = error;
      failed.abort();
    });
    async function* stream(signal: AbortSignal): AsyncGenerator<string> {
      yield encoder.metadata();
      let final: FinalEventBody | undefined;
      let started = run.afterId > 0;
      for await (const event of followRun(run.turnId, run.afterId, AbortSignal.any([signal, failed.signal]))) {
        if (stillAllowed && !(await stillAllowed())) {
          yield protocolFrame("error", { error: "not_found", message: `thread ${thread._id} not found` });
          return;
        }
        if (!started) {
          started = true;
          const snapshot = snapshotSeenBy(await runner.readThreadState(thread._id), caller);
          yield* encoder.start(stateValues(snapshot));
        }
        yield* encoder.event(event);
        if (isFinalEvent(event)) final = event;
      }
      if (signal.aborted) return;
      if (stillAllowed && !(await stillAllowed())) {
        yield protocolFrame("error", { error: "not_found", message: `thread ${thread._id} not found` });
        return;
      }
      if (!final && failure !== undefined) {
        const { error } = JSON.parse(errorResponse(failure).body) as { error: { code: string; message: string } };
        yield protocolFrame("error", { error: error.code, message: error.message });
        return;
      }
      const snapshot = snapshotSeenBy(await runner.readThreadState(thread._id), caller);
      const values = stateValues(snapshot);
      const all = protocolMessages(snapshot?.messages ?? []);
      // What the run added: the messages after its question.
      const question = all.findIndex((m) => m.id === `${run.turnId}:user`);
      const interrupts = (values.__interrupt__ as ProtocolInterrupt[] | undefined) ?? [];
      yield* encoder.end({
        values,
        added: question < 0 ? [] : all.slice(question + 1),
        interrupts,
        ...(final?.type === "failed" && { error: { code: final.code, message: final.message } }),
      });
    }
    return {
      status: 200,
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
        location: `/threads/${thread._id}/runs/${run.turnId}/stream`,
        ...runHeaders(thread._id, run.turnId),
      },
      body: "",
      stream,
      ...(run.running && {
        settled: run.running.then(
          () => undefined,
          () => undefined,
        ),
      }),
    };
  };

  return { awaitEnd, resultOf, runStream };
}
