import { randomUUID } from "node:crypto";
import { derivedUuid } from "../derived-id.js";
import { ConflictError, NotFoundError, NotLatestTurnError, ServiceUnavailableError } from "../errors.js";
import { questionText } from "../validation.js";

/** The one question parse of every entry, here for the routes that import it from the API (`lib/validation.ts`). */
export { questionText };
import type { TurnRequest, TurnRunner } from "../agent/turn-runner.js";
import { callsSeenBy, expandDispositions, messagesSeenBy, summarizeContext } from "../store/turn-record.js";
import { MAX_PAGE_SIZE, type ConversationDocument, type ConversationStore } from "../store/conversation-store.js";
import type { ThreadwiseDatabase } from "../store/database.js";
import type { TurnDocument, TurnWithCalls } from "../store/turn-store.js";
import { apiTurnJob, type DispatchOutcome, type TurnDispatcher } from "../queue/turn-dispatcher.js";
import type { Approvals } from "../approvals/approvals.js";
import type { ApprovalChoice, ApprovalDocument } from "../store/approval-store.js";
import { ownerKey, type Caller } from "../auth/principal.js";
import { mayAccess, relationTo, type ConversationNeed } from "../auth/conversation-access.js";
import type { TurnEventFollower } from "../events/turn-event-follower.js";
import type { Limits } from "../limits/limits.js";
import { TurnAdmission } from "../limits/turn-admission.js";
import { StreamLimiter } from "./stream-limiter.js";
import { assertCanStream, lastEventId, turnBegun, turnEventStream, wantsEventStream } from "./event-stream.js";
import type { IdempotentRequests } from "./idempotent-requests.js";
import { json, noContent, type Authenticate, type HttpRequest, type HttpResponse } from "./http.js";
import { parseId, parseIdempotencyKey, parseJsonBody, parseQuery, prefersAsync } from "./request-parsing.js";
import type { Route } from "./router.js";
import { openApiDocument } from "./openapi.js";
import type { AuditLog } from "../audit/audit-log.js";
import { conversationReadEntry } from "./lifecycle-routes.js";
import {
  approvalsQuery,
  archiveQuery,
  createConversationBody,
  MAX_ARCHIVE_PAGE_TURNS,
  decisionBody,
  listQuery,
  postMessageBody,
  regenerateBody,
  turnsQuery,
} from "./schemas.js";

export interface ApiRoutesDeps {
  authenticate: Authenticate;
  database: ThreadwiseDatabase;
  runner: TurnRunner;
  idempotentRequests: IdempotentRequests;
  maxMessageChars: number;
  /** Hands long and async turns to the worker. Default: none; every turn runs in the request. */
  dispatcher?: TurnDispatcher;
  /** What `Accept: text/event-stream` and `.../events` follow. */
  events: TurnEventFollower;
  /** Where these routes stream, named to a client that asks an adapter that cannot (the HTTP API in AWS). Default: unnamed. */
  streamingUrl?: string;
  approvals: Approvals;
  /** Budgets and rate limits: a stream holds a slot (docs/limits.md). Default: none. */
  limits?: Limits;
  /** Admits a turn before it is dispatched, and gives its admission back however it ends (docs/limits.md). Default: every turn admitted. */
  admission?: TurnAdmission;
  /** The cap of open event streams per principal. Default: a {@link StreamLimiter} with its defaults. */
  streams?: StreamLimiter;
  /** Records reads of a conversation's record, state, archive and inspector (docs/data-lifecycle.md). Default: none. */
  audit?: AuditLog;
}

/** An approval as the API shows it: `expiresAt` is its decision deadline (the document's own is retention). */
export function approvalView(a: ApprovalDocument) {
  const d = a.decision;
  return {
    approvalId: a._id,
    conversationId: a.conversationId,
    turnId: a.turnId,
    toolCallId: a.toolCallId,
    tool: a.tool,
    args: a.args,
    argsHash: a.argsHash,
    requester: a.requester,
    approvers: a.approvers,
    ...(a.context && { context: a.context }),
    createdAt: a.createdAt.toISOString(),
    expiresAt: a.deadline.toISOString(),
    status: a.status,
    decision: d
      ? {
          decision: d.kind,
          by: d.kind === "expire" ? null : d.by,
          at: d.at.toISOString(),
          ...(d.kind === "reject" && d.reason !== undefined && { reason: d.reason }),
          ...(d.kind === "edit" && { args: d.args }),
        }
      : null,
  };
}

/** A repeated Idempotency-Key from the same caller on the same conversation names the same turn, so a retry after a crash resumes it. */
function turnIdFor(caller: Caller, conversationId: string, key: string | undefined): string {
  if (key === undefined) return randomUUID();
  return derivedUuid(JSON.stringify([ownerKey(caller.principal), conversationId, key]), 8);
}

export function turnView(turn: TurnWithCalls) {
  return {
    turnId: turn._id,
    conversationId: turn.conversationId,
    status: turn.status,
    createdAt: turn.createdAt.toISOString(),
    completedAt: turn.completedAt?.toISOString() ?? null,
    durationMs: turn.durationMs ?? null,
    answer: turn.answer ?? null,
    error: turn.error ?? null,
    replaces: turn.replaces ?? null,
    replacedBy: turn.replacedBy ?? null,
    usage: turn.usage,
    context: summarizeContext(turn.calls),
    progress: { ...turn.progress, at: turn.progress.at.toISOString() },
    calls: turn.calls.map((c) => ({
      index: c.index,
      startedAt: c.startedAt.toISOString(),
      durationMs: c.durationMs,
      usage: c.usage,
      estimateError: c.estimateError ?? null,
      stats: c.stats,
      toolCalls: c.toolCalls,
      view: c.view,
      dispositions: c.dispositions ? expandDispositions(c.dispositions) : null,
    })),
  };
}

/** 200 with the answer, or 202 with where to poll when the turn went to the worker. */
function outcomeResponse(conversationId: string, turnId: string, outcome: DispatchOutcome): HttpResponse {
  if (outcome.kind === "completed" && outcome.result.status === "awaiting_approval") {
    const location = `/v1/conversations/${conversationId}/approvals?status=pending`;
    return json(202, { turnId, status: "awaiting_approval", approvals: outcome.result.approvals ?? [], location }, { location });
  }
  if (outcome.kind === "completed") return json(200, outcome.result);
  const location = `/v1/conversations/${conversationId}/turns/${turnId}`;
  return json(202, { turnId, status: "queued", location }, { location });
}

/** A turn without its model calls: what a client polls for progress. */
function turnSummary(turn: TurnDocument) {
  return {
    turnId: turn._id,
    status: turn.status,
    createdAt: turn.createdAt.toISOString(),
    completedAt: turn.completedAt?.toISOString() ?? null,
    progress: { ...turn.progress, at: turn.progress.at.toISOString() },
  };
}

/** The question of a `/v1` request body. */
function questionOf(request: HttpRequest, maxMessageChars: number): string {
  return questionText(parseJsonBody(request, postMessageBody).content, maxMessageChars, "content");
}

/**
 * How a request starts a turn, for `/v1` and the Agent Protocol alike: admitted by the limits
 * first (429 before anything runs), then run in the request or handed to the worker; and how a
 * stream holds one of its user's stream slots.
 */
export function turnEntry(deps: Pick<ApiRoutesDeps, "limits" | "admission" | "dispatcher" | "runner">) {
  const { runner } = deps;
  const admission = deps.admission ?? new TurnAdmission();
  // 429 before anything runs; the admission is given back however the turn ends here, or kept for the worker it goes to (docs/limits.md).
  const dispatch = (turn: TurnRequest, mode: { async?: boolean } = {}): Promise<DispatchOutcome> =>
    admission.run(
      { turnId: turn.turnId, principal: turn.caller.principal },
      async (hold) =>
        deps.dispatcher
          ? deps.dispatcher.dispatch({ ...turn, hold }, mode)
          : { kind: "completed", result: await runner.run({ ...turn, hold, origin: apiTurnJob(turn) }) },
      { handedOff: (outcome) => outcome.kind !== "completed" },
    );

  /** A stream holds one of its user's stream slots from before its turn is started until it ends. */
  const withStreamSlot = async (caller: Caller, open: () => Promise<HttpResponse>): Promise<HttpResponse> => {
    const limits = deps.limits;
    if (!limits) return open();
    const streamId = randomUUID();
    await limits.openStream(streamId, caller.principal);
    const close = () => limits.closeStream(streamId, caller.principal).catch(() => undefined);
    try {
      const response = await open();
      const body = response.stream;
      if (!body) {
        await close();
        return response;
      }
      return {
        ...response,
        async *stream(signal) {
          try {
            yield* body(signal);
          } finally {
            await close();
          }
        },
      };
    } catch (error) {
      await close();
      throw error;
    }
  };
  return { dispatch, withStreamSlot };
}

/**
 * For a stream a member follows: whether the member may still read the conversation, asked again
 * before each event, so a member removed mid-stream is sent nothing more. Undefined for its owner,
 * whom nothing can remove (the stream then costs no reads).
 */
export function readAccessWatch(conversations: ConversationStore, caller: Caller, conversation: ConversationDocument): (() => Promise<boolean>) | undefined {
  if (relationTo(conversation, caller) === "owner") return undefined;
  return async () => {
    const current = await conversations.get(conversation._id);
    return current !== null && mayAccess(current, caller, "read");
  };
}

/** The routes of the HTTP API (v1): docs/api.md and `lib/api/openapi.ts`. */
export function apiRoutes(deps: ApiRoutesDeps): Route[] {
  const { authenticate, database, runner } = deps;
  const { conversations, messages, turns } = database;
  const document = openApiDocument();
  const streams = deps.streams ?? new StreamLimiter();

  /** The caller and the conversation, when the caller may do what `need` names (`lib/auth/conversation-access.ts`); 404 when it may not see it. */
  const owned = async (request: HttpRequest, rawId: string, need: ConversationNeed = "read") => {
    const caller = await authenticate(request);
    const conversation = await conversations.getFor(parseId(rawId, "conversationId"), caller, need);
    return { caller, conversation };
  };

  const ownedTurn = async (conversationId: string, rawTurnId: string): Promise<TurnDocument> => {
    const turn = await turns.get(parseId(rawTurnId, "turnId"));
    if (!turn || turn.conversationId !== conversationId) throw new NotFoundError(`turn ${rawTurnId} not found`);
    return turn;
  };

  const { dispatch, withStreamSlot } = turnEntry(deps);

  /** Runs a turn replacing the conversation's latest one; in the request, as its deadline allows (a queued job carries no `replaces`). */
  const replaceTurn = async (caller: Caller, conversationId: string, replaces: string, content: string): Promise<HttpResponse> => {
    const turnId = randomUUID();
    const outcome = await dispatch({ conversationId, caller, content, turnId, replaces });
    return outcomeResponse(conversationId, turnId, outcome);
  };

  return [
    { method: "GET", pattern: /^\/healthz$/, handler: async () => json(200, { status: "ok" }) },
    { method: "GET", pattern: /^\/openapi\.json$/, handler: async () => json(200, document) },
    {
      // Readiness: the database answers and is set up; unreachable is the usual 503 with Retry-After.
      method: "GET",
      pattern: /^\/readyz$/,
      handler: async () => {
        if (!(await database.isSetUp())) throw new ServiceUnavailableError("the database is not set up");
        return json(200, { status: "ready", database: "ok" });
      },
    },
    {
      method: "POST",
      pattern: /^\/v1\/conversations$/,
      handler: async (request) => {
        const caller = await authenticate(request);
        parseJsonBody(request, createConversationBody, { optional: true });
        const doc = await conversations.create(caller.principal);
        return json(201, { conversationId: doc._id, createdAt: doc.createdAt.toISOString() }, { location: `/v1/conversations/${doc._id}` });
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/conversations$/,
      handler: async (request) => {
        const caller = await authenticate(request);
        const query = parseQuery(request, listQuery);
        return json(200, await conversations.list(caller.principal, query));
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)$/,
      handler: async (request, [id]) => json(200, await conversations.summaryOf((await owned(request, id)).conversation)),
    },
    {
      method: "DELETE",
      pattern: /^\/v1\/conversations\/([^/]+)$/,
      handler: async (request, [id]) => {
        const { conversation } = await owned(request, id, "delete");
        await database.deleteConversation(conversation._id);
        return noContent();
      },
    },
    {
      method: "POST",
      pattern: /^\/v1\/conversations\/([^/]+)\/messages$/,
      handler: async (request, [id]) => {
        const { caller, conversation } = await owned(request, id, "write");
        const text = questionOf(request, deps.maxMessageChars);
        const key = parseIdempotencyKey(request);
        const streamed = wantsEventStream(request, deps.streamingUrl);
        const afterId = lastEventId(request);
        const turnId = turnIdFor(caller, conversation._id, key);
        const turn = { conversationId: conversation._id, caller, content: text, turnId };
        const run = () => dispatch(turn, { async: prefersAsync(request) });
        // Over the caller's cap of open streams in this process: 429 before anything runs.
        const release = streamed ? streams.acquire(ownerKey(caller.principal)) : undefined;
        const stillAllowed = readAccessWatch(conversations, caller, conversation);
        const follow = { events: deps.events, turnId, conversationId: conversation._id, afterId, onClose: release, stillAllowed };
        try {
          return await postMessage();
        } catch (error) {
          release?.();
          throw error;
        }
        async function postMessage(): Promise<HttpResponse> {
          if (key === undefined) {
            if (!streamed) return outcomeResponse(conversation._id, turnId, await run());
            // Streamed, the turn runs on whether or not the client stays, once it began (docs/streaming.md).
            return withStreamSlot(caller, async () => {
              const running = run();
              await turnBegun(deps.events.hub, turnId, running);
              return turnEventStream({ ...follow, running });
            });
          }
          const scope = [ownerKey(caller.principal), conversation._id];
          const tags = { conversationId: conversation._id, owner: caller.principal };
          if (!streamed) return outcomeResponse(conversation._id, turnId, await deps.idempotentRequests.run(scope, key, text, run, tags));
          // The key's verdict comes before the stream: reused with another question is the usual 422, never the first turn's
          // events; a repeat while the first request still runs follows its turn (the key names it) rather than a 409.
          return withStreamSlot(caller, async () => {
            const started = await deps.idempotentRequests.start(scope, key, text, run, tags).catch((error: unknown) => {
              if (error instanceof ConflictError) return undefined;
              throw error;
            });
            if (started) await turnBegun(deps.events.hub, turnId, started.running);
            return turnEventStream({ ...follow, running: started?.running });
          });
        }
      },
    },
    {
      // Edit and resend the last question: a new turn replaces the named one, from the turn boundary before it.
      method: "POST",
      pattern: /^\/v1\/conversations\/([^/]+)\/turns\/([^/]+)\/edit$/,
      handler: async (request, [id, rawTurnId]) => {
        const { caller, conversation } = await owned(request, id, "write");
        const replaced = await ownedTurn(conversation._id, rawTurnId);
        const content = questionOf(request, deps.maxMessageChars);
        return replaceTurn(caller, conversation._id, replaced._id, content);
      },
    },
    {
      // Regenerate the last answer: the same question asked again as a new turn that replaces the named one.
      method: "POST",
      pattern: /^\/v1\/conversations\/([^/]+)\/turns\/([^/]+)\/regenerate$/,
      handler: async (request, [id, rawTurnId]) => {
        const { caller, conversation } = await owned(request, id, "write");
        const replaced = await ownedTurn(conversation._id, rawTurnId);
        parseJsonBody(request, regenerateBody, { optional: true });
        const question = await messages.question(conversation._id, replaced._id);
        if (question === undefined) throw new NotLatestTurnError(`turn ${replaced._id} has no question to ask again`, replaced._id);
        return replaceTurn(caller, conversation._id, replaced._id, question);
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)\/messages$/,
      handler: async (request, [id]) => {
        const { caller, conversation } = await owned(request, id);
        await deps.audit?.append(conversationReadEntry("conversation.read", caller, conversation, request));
        return json(200, { conversationId: conversation._id, messages: await messages.list(conversation._id) });
      },
    },
    {
      // The durable state beside the recorded views; read-only, never written back.
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)\/state$/,
      handler: async (request, [id]) => {
        const { caller, conversation } = await owned(request, id);
        await deps.audit?.append(conversationReadEntry("conversation.state.read", caller, conversation, request));
        const state = await runner.readWorkingSet(conversation._id);
        // A member reads what another's tools fetched only as far as they could have fetched it (docs/security.md).
        return json(200, { conversationId: conversation._id, ...state, messages: messagesSeenBy(state.messages, caller) });
      },
    },
    {
      // Finished turns moved out of the working set, newest page first, each page oldest first.
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)\/archive$/,
      handler: async (request, [id]) => {
        const { caller, conversation } = await owned(request, id);
        const query = parseQuery(request, archiveQuery);
        await deps.audit?.append(conversationReadEntry("conversation.archive.read", caller, conversation, request));
        const { archivedTurns } = await runner.readWorkingSet(conversation._id);
        const before = Math.min(query.before ?? archivedTurns + 1, archivedTurns + 1);
        const from = Math.max(1, before - (query.limit ?? MAX_ARCHIVE_PAGE_TURNS));
        const page = (await runner.readArchive(conversation._id, from, before - 1)).map((t) => ({ ...t, messages: messagesSeenBy(t.messages, caller) }));
        return json(200, { conversationId: conversation._id, archivedTurns, turns: page, nextBefore: from > 1 ? from : null });
      },
    },
    {
      // Newest first; `?status=running` tells a client that sent a message which turn to poll for progress.
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)\/turns$/,
      handler: async (request, [id]) => {
        const { conversation } = await owned(request, id);
        const { status } = parseQuery(request, turnsQuery);
        const docs = await turns.list(conversation._id, { status, limit: MAX_PAGE_SIZE });
        return json(200, { conversationId: conversation._id, turns: docs.map(turnSummary) });
      },
    },
    {
      // A turn's events as server-sent events, after `Last-Event-ID`: how a streaming client reconnects.
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)\/turns\/([^/]+)\/events$/,
      handler: async (request, [id, rawTurnId]) => {
        const { caller, conversation } = await owned(request, id);
        const turn = await ownedTurn(conversation._id, rawTurnId);
        assertCanStream(request, deps.streamingUrl);
        const afterId = lastEventId(request);
        const onClose = streams.acquire(ownerKey(caller.principal));
        try {
          return await withStreamSlot(caller, async () =>
            turnEventStream({
              events: deps.events,
              turnId: turn._id,
              conversationId: conversation._id,
              afterId,
              onClose,
              stillAllowed: readAccessWatch(conversations, caller, conversation),
            }),
          );
        } catch (error) {
          onClose();
          throw error;
        }
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)\/turns\/([^/]+)$/,
      handler: async (request, [id, rawTurnId]) => {
        const { caller, conversation } = await owned(request, id);
        const stored = await turns.getWithCalls((await ownedTurn(conversation._id, rawTurnId))._id);
        if (!stored) throw new NotFoundError(`turn ${rawTurnId} not found`);
        // A shared conversation's member sees another's calls only as far as they could have fetched what those calls drew on.
        const turn = { ...stored, calls: callsSeenBy(stored.calls, caller, stored.askedBy) };
        await deps.audit?.append(conversationReadEntry("conversation.inspect", caller, conversation, request, { turnId: turn._id }));
        // What was asked, who decided and when, and (through the calls' views) what ran.
        const approvals = await database.approvals.listByTurn(turn._id);
        return json(200, { ...turnView(turn), approvals: approvals.map(approvalView) });
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/conversations\/([^/]+)\/approvals$/,
      handler: async (request, [id]) => {
        const { conversation } = await owned(request, id);
        const { status } = parseQuery(request, approvalsQuery);
        const approvals = await deps.approvals.list(conversation._id, status);
        return json(200, { conversationId: conversation._id, approvals: approvals.map(approvalView) });
      },
    },
    {
      method: "POST",
      pattern: /^\/v1\/conversations\/([^/]+)\/approvals\/([^/]+)$/,
      handler: async (request, [id, rawApprovalId]) => {
        const { caller, conversation } = await owned(request, id, "write");
        const approvalId = parseId(rawApprovalId, "approvalId");
        const body = parseJsonBody(request, decisionBody);
        const choice: ApprovalChoice =
          body.decision === "approve"
            ? { kind: "approve" }
            : body.decision === "edit"
              ? { kind: "edit", args: body.args }
              : { kind: "reject", ...(body.reason !== undefined && { reason: body.reason }) };
        const result = await deps.approvals.decide(conversation._id, approvalId, caller, choice);
        return json(200, { approval: approvalView(result.approval), decided: result.decided, resumed: result.resumed });
      },
    },
  ];
}
