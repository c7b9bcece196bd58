import { randomUUID } from "node:crypto";
import { MongoServerError } from "mongodb";
import type { Caller } from "../auth/principal.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import { isFinalEvent, type FinalEventBody, type TurnEvent } from "../events/turn-event-types.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import { hasEnded } from "../store/turn-lifecycle.js";
import type { TurnDocument } from "../store/turn-store.js";
import {
  AGENT_PROTOCOL_ASSISTANT_ID,
  PROTOCOL_MULTITASK_STRATEGIES,
  cancelQuery,
  createThreadBody,
  historyBody,
  patchThreadBody,
  runBody,
  runsListQuery,
  searchThreadsBody,
  streamQuery,
  type RunBody,
} from "./agent-protocol-schemas.js";
import {
  decisionsOf,
  ProtocolStreamEncoder,
  protocolFrame,
  protocolMessages,
  questionOf,
  runView,
  stateValues,
  streamModesOf,
  threadState,
  threadView,
  type ProtocolInterrupt,
} from "./agent-protocol.js";
import { questionText, turnEntry, type ApiRoutesDeps } from "./api-routes.js";
import { errorResponse } from "./error-response.js";
import { assertCanStream, lastEventId, turnBegun } from "./event-stream.js";
import { json, noContent, type HttpRequest, type HttpResponse } from "./http.js";
import { parseId, parseJsonBody, parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";

const DUPLICATE_KEY = 11000;
/** How often a run whose calls were all decided looks for its continuation, and for how long. */
const RESUME_POLL_MS = 200;
const RESUME_WAIT_MS = 120_000;
const ID = "([^/]+)";

/** What the protocol routes need: the same parts as the `/v1` routes, so a run is a turn with every guarantee of one. */
export type AgentProtocolDeps = Pick<
  ApiRoutesDeps,
  "authenticate" | "database" | "runner" | "maxMessageChars" | "dispatcher" | "events" | "streamingUrl" | "approvals" | "limits" | "admission"
>;

/** Run fields whose meaning Threadwise cannot honour: refused rather than ignored. */
const REFUSED_RUN_FIELDS = ["checkpoint", "checkpoint_id", "interrupt_before", "interrupt_after", "webhook", "after_seconds"] as const;

/**
 * The answer to a `thread_id` that is taken, the same whoever holds it (the caller, another user,
 * another tenant, a channel): it names no owner and returns nothing of the thread.
 */
function threadIdTaken(id: string | undefined, cause?: unknown): ConflictError {
  return new ConflictError(`thread_id ${id} cannot be used: choose another, or leave thread_id out and the server picks one`, undefined, { cause });
}

/** How a run's turn ended, for its answer or its stream's last frames. */
interface RunEnd {
  final: FinalEventBody | undefined;
}

/**
 * The Agent Protocol's thread and run routes (docs/agent-protocol.md), over the same stores, runner
 * and approvals as `/v1`: a thread is a conversation (404 for anyone else's), a run a turn, its
 * interrupts the turn's approvals. LangGraph SDK clients (`Client`, `useStream`) point `apiUrl` at
 * the deployment.
 */
export function agentProtocolRoutes(deps: AgentProtocolDeps): Route[] {
  const { authenticate, database, runner } = deps;
  const { conversations, turns } = database;

  const ownedThread = async (request: HttpRequest, rawId: string): Promise<{ caller: Caller; thread: ConversationDocument }> => {
    const caller = await authenticate(request);
    const thread = await conversations.getOwned(parseId(rawId, "thread_id"), caller.principal);
    return { caller, thread };
  };

  const ownedRun = async (threadId: string, rawRunId: string): Promise<TurnDocument> => {
    const turn = await turns.get(parseId(rawRunId, "run_id"));
    if (!turn || turn.conversationId !== threadId) throw new NotFoundError(`run ${rawRunId} not found`);
    return turn;
  };

  const describe = async (thread: ConversationDocument) => {
    const [latest, snapshot] = await Promise.all([turns.latest(thread._id), runner.readThreadState(thread._id)]);
    return threadView(thread, latest, snapshot);
  };

  // The same entry as `/v1`: limits admit the turn first, streams hold a slot (docs/limits.md).
  const { dispatch, withStreamSlot } = turnEntry(deps);

  /** Checks what a run asks that is not about its input; returns how to start it. */
  const checkRun = (body: RunBody): { enqueue: boolean } => {
    if (body.assistant_id !== AGENT_PROTOCOL_ASSISTANT_ID) throw new NotFoundError(`assistant ${body.assistant_id} not found`);
    const refused = REFUSED_RUN_FIELDS.filter((field) => body[field] !== undefined && body[field] !== null);
    if (refused.length > 0) {
      throw new ValidationError(
        `${refused.join(", ")} not served: a run continues the thread from its latest state`,
        refused.map((path) => ({ path, message: "not served" })),
      );
    }
    const strategy = body.multitask_strategy ?? "reject";
    if (!(PROTOCOL_MULTITASK_STRATEGIES as readonly string[]).includes(strategy)) {
      throw new ValidationError(`multitask_strategy ${strategy} is not served`, [{ path: "multitask_strategy", message: "reject or enqueue" }]);
    }
    if (strategy === "enqueue" && !deps.dispatcher) {
      throw new ValidationError("multitask_strategy enqueue needs the turn queue, which this server has none of", [
        { path: "multitask_strategy", message: "reject" },
      ]);
    }
    const hasInput = body.input != null;
    const resumes = body.command?.resume !== undefined;
    if (body.command && (body.command.update !== undefined || body.command.goto !== undefined)) {
      throw new ValidationError("a command may only resume: update and goto are not served", [{ path: "command", message: "resume only" }]);
    }
    if (hasInput === resumes) throw new ValidationError("a run takes input or command.resume, exactly one", [{ path: "input", message: "input xor command" }]);
    return { enqueue: strategy === "enqueue" };
  };

  /**
   * Starts the run: a new turn from its input, or the waiting turn resumed with its decisions. The
   * returned promise settles when the request's own part is done (the turn in the request, or its
   * decisions taken); `afterId` is where its events begin.
   */
  const startRun = async (caller: Caller, thread: ConversationDocument, body: RunBody, options: { background?: boolean } = {}) => {
    const { enqueue } = checkRun(body);
    if (body.command?.resume !== undefined) {
      const waiting = await turns.list(thread._id, { status: "awaiting_approval", limit: 1 });
      const turn = waiting[0];
      if (!turn) throw new ValidationError("nothing on this thread waits for a decision", [{ path: "command.resume", message: "no pending interrupt" }]);
      const pending = (await database.approvals.listByTurn(turn._id)).filter((a) => a.status === "pending");
      const decisions = decisionsOf(body.command.resume, pending);
      const afterId = await database.turnEvents.lastId(turn._id);
      const running = (async () => {
        for (const { approvalId, choice } of decisions) await deps.approvals.decide(thread._id, approvalId, caller, choice);
      })();
      return { turnId: turn._id, afterId, running };
    }
    const content = questionText(questionOf(body.input as NonNullable<RunBody["input"]>), deps.maxMessageChars, "input.messages.0.content");
    const turnId = randomUUID();
    // A background run goes to the queue where there is one: a Lambda process is frozen once it has answered.
    const queued = enqueue || (options.background === true && deps.dispatcher !== undefined);
    const running = dispatch({ conversationId: thread._id, caller, content, turnId }, { async: queued });
    return { turnId, afterId: 0, running };
  };

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
  const resultOf = async (threadId: string, end: RunEnd) => {
    const values = stateValues(await runner.readThreadState(threadId));
    if (end.final?.type === "failed") values.__error__ = { error: end.final.code, message: end.final.message };
    return values;
  };

  const runHeaders = (threadId: string, runId: string) => ({ "content-location": `/threads/${threadId}/runs/${runId}` });

  /** A run's events as the protocol's server-sent events, for the modes asked; `running` is the request's own part of it. */
  const runStream = (
    thread: ConversationDocument,
    run: { turnId: string; afterId: number; running?: Promise<unknown> },
    modes: ReturnType<typeof streamModesOf>,
  ): HttpResponse => {
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
        if (!started) {
          started = true;
          const snapshot = await runner.readThreadState(thread._id);
          yield* encoder.start(stateValues(snapshot));
        }
        yield* encoder.event(event);
        if (isFinalEvent(event)) final = event;
      }
      if (signal.aborted) return;
      if (!final && failure !== undefined) {
        const { error } = JSON.parse(errorResponse(failure).body) as { error: { code: string; message: string } };
        yield protocolFrame("error", { error: error.code, message: error.message });
        return;
      }
      const snapshot = await runner.readThreadState(thread._id);
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

  return [
    {
      method: "GET",
      pattern: new RegExp(`^/assistants/${ID}$`),
      handler: async (request, [id]) => {
        await authenticate(request);
        if (id !== AGENT_PROTOCOL_ASSISTANT_ID) throw new NotFoundError(`assistant ${id} not found`);
        return json(200, assistantView());
      },
    },
    {
      method: "POST",
      pattern: /^\/assistants\/search$/,
      handler: async (request) => {
        await authenticate(request);
        return json(200, [assistantView()]);
      },
    },
    {
      method: "POST",
      pattern: /^\/threads$/,
      handler: async (request) => {
        const caller = await authenticate(request);
        const body = parseJsonBody(request, createThreadBody, { optional: true });
        if (body.supersteps !== undefined)
          throw new ValidationError("supersteps are not served: a thread starts empty", [{ path: "supersteps", message: "not served" }]);
        const id = body.thread_id === undefined ? undefined : parseId(body.thread_id, "thread_id");
        if (id !== undefined) {
          // Only the owner's own thread is returned (if_exists=do_nothing); any other taken id, whoever
          // holds it, gets the one answer below (docs/security.md, "The tenant boundary").
          const own = await conversations.getOwned(id, caller.principal).catch((error: unknown) => {
            if (error instanceof NotFoundError) return undefined;
            throw error;
          });
          if (own && body.if_exists === "do_nothing") return json(200, await describe(own));
          if (own || (await conversations.get(id))) throw threadIdTaken(id);
        }
        const created = await conversations
          .create(caller.principal, { channel: "api" }, new Date(), { id, metadata: body.metadata })
          .catch((error: unknown) => {
            if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) throw threadIdTaken(id, error);
            throw error;
          });
        return json(200, await describe(created));
      },
    },
    {
      method: "POST",
      pattern: /^\/threads\/search$/,
      handler: async (request) => {
        const caller = await authenticate(request);
        const query = parseJsonBody(request, searchThreadsBody, { optional: true });
        const ids = query.ids?.map((id) => parseId(id, "ids"));
        const docs = await conversations.search(caller.principal, {
          ids,
          metadata: query.metadata ?? undefined,
          limit: query.limit ?? 10,
          offset: query.offset ?? 0,
        });
        const threads = await Promise.all(docs.map(describe));
        return json(200, query.status ? threads.filter((t) => t.status === query.status) : threads);
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}$`),
      handler: async (request, [id]) => json(200, await describe((await ownedThread(request, id)).thread)),
    },
    {
      method: "PATCH",
      pattern: new RegExp(`^/threads/${ID}$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id);
        const body = parseJsonBody(request, patchThreadBody);
        const updated = await conversations.mergeMetadata(thread._id, caller.principal, body.metadata ?? {});
        return json(200, await describe(updated));
      },
    },
    {
      method: "DELETE",
      pattern: new RegExp(`^/threads/${ID}$`),
      handler: async (request, [id]) => {
        const { thread } = await ownedThread(request, id);
        await database.deleteConversation(thread._id);
        return noContent();
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/state$`),
      handler: async (request, [id]) => {
        const { thread } = await ownedThread(request, id);
        return json(200, threadState(thread._id, await runner.readThreadState(thread._id)));
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/state/${ID}$`),
      handler: async (request, [id, checkpointId]) => {
        const { thread } = await ownedThread(request, id);
        for await (const snapshot of runner.readThreadHistory(thread._id)) {
          if (snapshot.checkpointId === checkpointId) return json(200, threadState(thread._id, snapshot));
        }
        throw new NotFoundError(`checkpoint ${checkpointId} not found`);
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/history$`),
      handler: async (request, [id]) => {
        const { thread } = await ownedThread(request, id);
        const body = parseJsonBody(request, historyBody, { optional: true });
        const before = body.before?.configurable?.checkpoint_id;
        const states = [];
        for await (const snapshot of runner.readThreadHistory(thread._id, { limit: body.limit ?? 10, before })) states.push(threadState(thread._id, snapshot));
        return json(200, states);
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs/wait$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id);
        const body = parseJsonBody(request, runBody);
        const run = await startRun(caller, thread, body);
        await run.running;
        const end = await awaitEnd(run.turnId, run.afterId);
        return json(200, await resultOf(thread._id, end), runHeaders(thread._id, run.turnId));
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs/stream$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id);
        const body = parseJsonBody(request, runBody);
        assertCanStream(request, deps.streamingUrl);
        const modes = streamModesOf(body.stream_mode);
        return withStreamSlot(caller, async () => {
          const run = await startRun(caller, thread, body);
          // A run refused before it began (a turn already running: multitask "reject") is the usual error, not a stream.
          if (run.afterId === 0) await turnBegun(deps.events.hub, run.turnId, run.running);
          return runStream(thread, run, modes);
        });
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id);
        const body = parseJsonBody(request, runBody);
        const run = await startRun(caller, thread, body, { background: true });
        if (run.afterId === 0) await turnBegun(deps.events.hub, run.turnId, run.running);
        // The run goes on after this answer: in the worker, or (without a queue, locally) in this process.
        run.running.catch(() => undefined);
        const turn = await ownedRun(thread._id, run.turnId);
        return json(200, runView(turn, AGENT_PROTOCOL_ASSISTANT_ID), runHeaders(thread._id, run.turnId));
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/runs$`),
      handler: async (request, [id]) => {
        const { thread } = await ownedThread(request, id);
        const query = parseQuery(request, runsListQuery);
        const docs = await turns.list(thread._id, { limit: (query.offset ?? 0) + (query.limit ?? 10) });
        return json(
          200,
          docs.slice(query.offset ?? 0).map((t) => runView(t, AGENT_PROTOCOL_ASSISTANT_ID)),
        );
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/runs/${ID}$`),
      handler: async (request, [id, runId]) => {
        const { thread } = await ownedThread(request, id);
        return json(200, runView(await ownedRun(thread._id, runId), AGENT_PROTOCOL_ASSISTANT_ID));
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/runs/${ID}/join$`),
      handler: async (request, [id, runId]) => {
        const { thread } = await ownedThread(request, id);
        const turn = await ownedRun(thread._id, runId);
        return json(200, await resultOf(thread._id, await awaitEnd(turn._id, 0)));
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/runs/${ID}/stream$`),
      handler: async (request, [id, runId]) => {
        const { caller, thread } = await ownedThread(request, id);
        const turn = await ownedRun(thread._id, runId);
        assertCanStream(request, deps.streamingUrl);
        const modes = streamModesOf(parseQuery(request, streamQuery).stream_mode);
        return withStreamSlot(caller, async () => runStream(thread, { turnId: turn._id, afterId: lastEventId(request) }, modes));
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs/${ID}/cancel$`),
      handler: async (request, [id, runId]) => {
        const { caller, thread } = await ownedThread(request, id);
        const turn = await ownedRun(thread._id, runId);
        const { action } = parseQuery(request, cancelQuery);
        if (action === "rollback")
          throw new ValidationError("cancel with rollback is not served: a turn's messages stay in the record", [{ path: "action", message: "interrupt" }]);
        if (turn.status !== "awaiting_approval") {
          throw new ConflictError(`run ${turn._id} is ${turn.status}: only a run waiting for approval can be cancelled (its calls are rejected)`);
        }
        // Cancelling a waiting run rejects its calls: the model is told, and the turn ends with an answer that nothing ran.
        const pending = (await database.approvals.listByTurn(turn._id)).filter((a) => a.status === "pending");
        for (const approval of pending) await deps.approvals.decide(thread._id, approval._id, caller, { kind: "reject", reason: "the run was cancelled" });
        return noContent();
      },
    },
  ];
}

/** The one assistant, as `assistants.get` returns it. */
function assistantView() {
  const at = new Date(0).toISOString();
  return {
    assistant_id: AGENT_PROTOCOL_ASSISTANT_ID,
    graph_id: AGENT_PROTOCOL_ASSISTANT_ID,
    name: "Threadwise",
    description: "The deployment's assistant: its tools, its approvals and its shaped model view.",
    config: {},
    context: {},
    metadata: {},
    version: 1,
    created_at: at,
    updated_at: at,
  };
}
