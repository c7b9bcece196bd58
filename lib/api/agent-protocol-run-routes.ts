import type { ConversationNeed } from "../auth/conversation-access.js";
import type { Caller } from "../auth/principal.js";
import { ConflictError, ValidationError } from "../errors.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import type { TurnDocument } from "../store/turn-store.js";
import { runHeaders, type runEvents } from "./agent-protocol-run-events.js";
import type { runStarter } from "./agent-protocol-run-start.js";
import { AGENT_PROTOCOL_ASSISTANT_ID, cancelQuery, runBody, runsListQuery, streamQuery } from "./agent-protocol-schemas.js";
import { runView, streamModesOf } from "./agent-protocol.js";
import type { ApiRoutesDeps } from "./api-routes.js";
import { assertCanStream, lastEventId, turnBegun } from "./event-stream.js";
import { json, noContent, type HttpRequest, type HttpResponse } from "./http.js";
import { parseJsonBody, parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";

const ID = "([^/]+)";

/** What the run routes need besides the run's parts: the stores, the streaming URL, the approvals and the turn events' hub. */
export type RunRoutesDeps = Pick<ApiRoutesDeps, "database" | "streamingUrl" | "approvals" | "events">;

/** Who may reach a thread and its runs, and the parts a run is made of, as `agentProtocolRoutes` assembles them. */
export interface RunAccess {
  /** The caller and their thread, or 404 for a thread that is not theirs. */
  ownedThread(request: HttpRequest, rawId: string, need?: ConversationNeed): Promise<{ caller: Caller; thread: ConversationDocument }>;
  /** A run of that thread, or 404. */
  ownedRun(threadId: string, rawRunId: string): Promise<TurnDocument>;
  startRun: ReturnType<typeof runStarter>;
  events: Pick<ReturnType<typeof runEvents>, "awaitEnd" | "resultOf" | "runStream">;
  /** Opens the stream `open` answers with while the caller holds a stream slot (the turn entry's, docs/limits.md). */
  withStreamSlot(caller: Caller, open: () => Promise<HttpResponse>): Promise<HttpResponse>;
}

/**
 * The Agent Protocol's run routes (docs/agent-protocol.md): a run is a turn, started and waited
 * for, streamed, started in the background, listed, joined, followed again, or cancelled while it
 * waits for approval (its calls rejected).
 */
export function runRoutes(deps: RunRoutesDeps, access: RunAccess): Route[] {
  const { database } = deps;
  const { turns } = database;
  const { ownedThread, ownedRun, startRun, withStreamSlot } = access;
  const { awaitEnd, resultOf, runStream } = access.events;
  return [
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs/wait$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id, "write");
        const body = parseJsonBody(request, runBody);
        const run = await startRun(caller, thread, body);
        await run.running;
        const end = await awaitEnd(run.turnId, run.afterId);
        return json(200, await resultOf(thread._id, end, caller), runHeaders(thread._id, run.turnId));
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs/stream$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id, "write");
        const body = parseJsonBody(request, runBody);
        assertCanStream(request, deps.streamingUrl);
        const modes = streamModesOf(body.stream_mode);
        return withStreamSlot(caller, async () => {
          const run = await startRun(caller, thread, body);
          // A run refused before it began (a turn already running: multitask "reject") is the usual error, not a stream.
          if (run.afterId === 0) await turnBegun(deps.events.hub, run.turnId, run.running);
          return runStream(caller, thread, run, modes);
        });
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id, "write");
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
        const { caller, thread } = await ownedThread(request, id);
        const turn = await ownedRun(thread._id, runId);
        return json(200, await resultOf(thread._id, await awaitEnd(turn._id, 0), caller));
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
        return withStreamSlot(caller, async () => runStream(caller, thread, { turnId: turn._id, afterId: lastEventId(request) }, modes));
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/runs/${ID}/cancel$`),
      handler: async (request, [id, runId]) => {
        const { caller, thread } = await ownedThread(request, id, "write");
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
