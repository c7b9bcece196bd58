import { MongoServerError } from "mongodb";
import { relationTo, type ConversationNeed } from "../auth/conversation-access.js";
import type { Caller } from "../auth/principal.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import { AGENT_PROTOCOL_ASSISTANT_ID, createThreadBody, historyBody, patchThreadBody, searchThreadsBody } from "./agent-protocol-schemas.js";
import { snapshotSeenBy, threadState, type threadView } from "./agent-protocol.js";
import type { ApiRoutesDeps } from "./api-routes.js";
import { json, noContent, type HttpRequest } from "./http.js";
import { parseId, parseJsonBody } from "./request-parsing.js";
import type { Route } from "./router.js";

const DUPLICATE_KEY = 11000;
const ID = "([^/]+)";

/** What the thread routes need: the stores, the runner's thread reads, and how the caller is named. */
export type ThreadRoutesDeps = Pick<ApiRoutesDeps, "authenticate" | "database" | "runner">;

/** Who may reach a thread, as `agentProtocolRoutes` decides it (docs/security.md, "The tenant boundary"). */
export interface ThreadAccess {
  /** The caller and their thread, or 404 for a thread that is not theirs. */
  ownedThread(request: HttpRequest, rawId: string, need?: ConversationNeed): Promise<{ caller: Caller; thread: ConversationDocument }>;
  /** The thread as the protocol shows it. */
  describe(thread: ConversationDocument, viewer: Caller): Promise<ReturnType<typeof threadView>>;
}

/**
 * The answer to a `thread_id` that is taken, the same whoever holds it (the caller, another user,
 * another tenant, a channel): it names no owner and returns nothing of the thread.
 */
function threadIdTaken(id: string | undefined, cause?: unknown): ConflictError {
  return new ConflictError(`thread_id ${id} cannot be used: choose another, or leave thread_id out and the server picks one`, undefined, { cause });
}

/**
 * The Agent Protocol's assistant and thread routes (docs/agent-protocol.md): the one assistant, and
 * a thread as a conversation, created, read, patched, searched and deleted, its state and history
 * read from the durable thread.
 */
export function threadRoutes(deps: ThreadRoutesDeps, access: ThreadAccess): Route[] {
  const { authenticate, database, runner } = deps;
  const { conversations } = database;
  const { ownedThread, describe } = access;
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
          const existing = await conversations.get(id);
          const own = existing && relationTo(existing, caller) === "owner" ? existing : undefined;
          if (own && body.if_exists === "do_nothing") return json(200, await describe(own, caller));
          if (existing) throw threadIdTaken(id);
        }
        const created = await conversations
          .create(caller.principal, { channel: "api" }, new Date(), { id, metadata: body.metadata })
          .catch((error: unknown) => {
            if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) throw threadIdTaken(id, error);
            throw error;
          });
        return json(200, await describe(created, caller));
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
        const threads = await Promise.all(docs.map((doc) => describe(doc, caller)));
        return json(200, query.status ? threads.filter((t) => t.status === query.status) : threads);
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id);
        return json(200, await describe(thread, caller));
      },
    },
    {
      method: "PATCH",
      pattern: new RegExp(`^/threads/${ID}$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id, "write");
        const body = parseJsonBody(request, patchThreadBody);
        const updated = await conversations.mergeMetadata(thread._id, thread.owner, body.metadata ?? {});
        return json(200, await describe(updated, caller));
      },
    },
    {
      method: "DELETE",
      pattern: new RegExp(`^/threads/${ID}$`),
      handler: async (request, [id]) => {
        const { thread } = await ownedThread(request, id, "delete");
        await database.deleteConversation(thread._id);
        return noContent();
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/state$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id);
        return json(200, threadState(thread._id, snapshotSeenBy(await runner.readThreadState(thread._id), caller)));
      },
    },
    {
      method: "GET",
      pattern: new RegExp(`^/threads/${ID}/state/${ID}$`),
      handler: async (request, [id, checkpointId]) => {
        const { caller, thread } = await ownedThread(request, id);
        for await (const snapshot of runner.readThreadHistory(thread._id)) {
          if (snapshot.checkpointId === checkpointId) return json(200, threadState(thread._id, snapshotSeenBy(snapshot, caller)));
        }
        throw new NotFoundError(`checkpoint ${checkpointId} not found`);
      },
    },
    {
      method: "POST",
      pattern: new RegExp(`^/threads/${ID}/history$`),
      handler: async (request, [id]) => {
        const { caller, thread } = await ownedThread(request, id);
        const body = parseJsonBody(request, historyBody, { optional: true });
        const before = body.before?.configurable?.checkpoint_id;
        const states = [];
        for await (const snapshot of runner.readThreadHistory(thread._id, { limit: body.limit ?? 10, before }))
          states.push(threadState(thread._id, snapshotSeenBy(snapshot, caller)));
        return json(200, states);
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
