import { MongoServerError } from "mongodb";
import type { Caller } from "../auth/principal.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import type { TurnDocument } from "../store/turn-store.js";
import { runEvents, runHeaders } from "./agent-protocol-run-events.js";
import { runStarter } from "./agent-protocol-run-start.js";
import {
  AGENT_PROTOCOL_ASSISTANT_ID,
  cancelQuery,
  createThreadBody,
  historyBody,
  patchThreadBody,
  runBody,
  runsListQuery,
  searchThreadsBody,
  streamQuery,
} from "./agent-protocol-schemas.js";
import { runView, streamModesOf, threadState, threadView } from "./agent-protocol.js";
import { turnEntry, type ApiRoutesDeps } from "./api-routes.js";
import { assertCanStream, lastEventId, turnBegun } from "./event-stream.js";
import { json, noContent, type HttpRequest } from "./http.js";
import { parseId, parseJsonBody, parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";

const DUPLICATE_KEY = 11000;
const ID = "([^/]+)";

/** What the protocol routes need: the same parts as the `/v1` routes, so a run is a turn with every guarantee of one. */
export type AgentProtocolDeps = Pick<
  ApiRoutesDeps,
  "authenticate" | "database" | "runner" | "maxMessageChars" | "dispatcher" | "events" | "streamingUrl" | "approvals" | "limits" | "admission"
>;

/**
 * The answer to a `thread_id` that is taken, the same whoever holds it (the caller, another user,
 * another tenant, a channel): it names no owner and returns nothing of the thread.
 */
function threadIdTaken(id: string | undefined, cause?: unknown): ConflictError {
  return new ConflictError(`thread_id ${id} cannot be used: choose another, or leave thread_id out and the server picks one`, undefined, { cause });
}

/**
 * The Agent Protocol's thread and run routes (docs/agent-protocol.md), over the same stores, runner
 * and approvals as `/v1`: a thread is a conversation (404 for anyone else's), a run a turn, its
 * interrupts the turn's approvals. LangGraph SDK clients (`Client`, `useStream`) point `apiUrl` at
 * the deployment. This file holds the routes and who may reach a thread or run; starting a run is
 * `agent-protocol-run-start.ts`, following its events `agent-protocol-run-events.ts`.
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
  const startRun = runStarter({ ...deps, dispatch });
  const { awaitEnd, resultOf, runStream } = runEvents(deps);

  const routes: Route[] = [
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
  // What the protocol does not serve is 404 whatever the method (docs/agent-protocol.md), never a 405.
  return routes.map((route) => ({ ...route, otherMethodsNotFound: true }));
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
