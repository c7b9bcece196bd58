import type { ConversationNeed } from "../auth/conversation-access.js";
import type { Caller } from "../auth/principal.js";
import { NotFoundError } from "../errors.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import type { TurnDocument } from "../store/turn-store.js";
import { runEvents } from "./agent-protocol-run-events.js";
import { runRoutes } from "./agent-protocol-run-routes.js";
import { runStarter } from "./agent-protocol-run-start.js";
import { threadRoutes } from "./agent-protocol-thread-routes.js";
import { snapshotSeenBy, threadView } from "./agent-protocol.js";
import { turnEntry, type ApiRoutesDeps } from "./api-routes.js";
import type { HttpRequest } from "./http.js";
import { parseId } from "./request-parsing.js";
import type { Route } from "./router.js";

/** What the protocol routes need: the same parts as the `/v1` routes, so a run is a turn with every guarantee of one. */
export type AgentProtocolDeps = Pick<
  ApiRoutesDeps,
  "authenticate" | "database" | "runner" | "maxMessageChars" | "dispatcher" | "events" | "streamingUrl" | "approvals" | "limits" | "admission"
>;

/**
 * The Agent Protocol's thread and run routes (docs/agent-protocol.md), over the same stores, runner
 * and approvals as `/v1`: a thread is a conversation (404 for anyone else's), a run a turn, its
 * interrupts the turn's approvals. LangGraph SDK clients (`Client`, `useStream`) point `apiUrl` at
 * the deployment. This file decides who may reach a thread or run and assembles the parts: the
 * assistant and thread routes (`agent-protocol-thread-routes.ts`), the run routes
 * (`agent-protocol-run-routes.ts`), starting a run (`agent-protocol-run-start.ts`) and following
 * its events (`agent-protocol-run-events.ts`).
 */
export function agentProtocolRoutes(deps: AgentProtocolDeps): Route[] {
  const { authenticate, database, runner } = deps;
  const { conversations, turns } = database;

  /** The caller and the thread, when the caller may do what `need` names (`lib/auth/conversation-access.ts`); 404 when it may not see it. */
  const ownedThread = async (
    request: HttpRequest,
    rawId: string,
    need: ConversationNeed = "read",
  ): Promise<{ caller: Caller; thread: ConversationDocument }> => {
    const caller = await authenticate(request);
    const thread = await conversations.getFor(parseId(rawId, "thread_id"), caller, need);
    return { caller, thread };
  };

  const ownedRun = async (threadId: string, rawRunId: string): Promise<TurnDocument> => {
    const turn = await turns.get(parseId(rawRunId, "run_id"));
    if (!turn || turn.conversationId !== threadId) throw new NotFoundError(`run ${rawRunId} not found`);
    return turn;
  };

  const describe = async (thread: ConversationDocument, viewer: Caller) => {
    const [latest, snapshot] = await Promise.all([turns.latest(thread._id), runner.readThreadState(thread._id)]);
    return threadView(thread, latest, snapshotSeenBy(snapshot, viewer));
  };

  // The same entry as `/v1`: limits admit the turn first, streams hold a slot (docs/limits.md).
  const { dispatch, withStreamSlot } = turnEntry(deps);
  const startRun = runStarter({ ...deps, dispatch });
  const events = runEvents(deps);

  const routes: Route[] = [...threadRoutes(deps, { ownedThread, describe }), ...runRoutes(deps, { ownedThread, ownedRun, startRun, events, withStreamSlot })];
  // What the protocol does not serve is 404 whatever the method (docs/agent-protocol.md), never a 405.
  return routes.map((route) => ({ ...route, otherMethodsNotFound: true }));
}
