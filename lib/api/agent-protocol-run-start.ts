import { randomUUID } from "node:crypto";
import type { Caller } from "../auth/principal.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { ConversationDocument } from "../store/conversation-store.js";
import { AGENT_PROTOCOL_ASSISTANT_ID, PROTOCOL_MULTITASK_STRATEGIES, type RunBody } from "./agent-protocol-schemas.js";
import { decisionsOf, questionOf } from "./agent-protocol.js";
import { questionText, type ApiRoutesDeps } from "./api-routes.js";

/** Run fields whose meaning Threadwise cannot honour: refused rather than ignored. */
const REFUSED_RUN_FIELDS = ["checkpoint", "checkpoint_id", "interrupt_before", "interrupt_after", "webhook", "after_seconds"] as const;

/**
 * Checks what a run asks that is not about its input (the assistant, fields Threadwise cannot
 * honour, the multitask strategy, input or resume); returns how to start it. `hasQueue`: whether
 * the server has a turn queue, which `enqueue` needs.
 */
export function checkRun(body: RunBody, { hasQueue }: { hasQueue: boolean }): { enqueue: boolean } {
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
  if (strategy === "enqueue" && !hasQueue) {
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
}

/** What starting a run needs: the `/v1` parts, and the turn entry's `dispatch` (limits admit the turn first). */
export type RunStartDeps = Pick<ApiRoutesDeps, "database" | "dispatcher" | "approvals" | "maxMessageChars"> & {
  dispatch: (turn: { conversationId: string; caller: Caller; content: string; turnId: string }, mode: { async?: boolean }) => Promise<unknown>;
};

/** A run begun: its turn, the event id its events follow, and the request's own part of it. */
export interface StartedRun {
  turnId: string;
  afterId: number;
  running: Promise<unknown>;
}

/**
 * Starts the run: a new turn from its input, or the waiting turn resumed with its decisions. The
 * returned promise settles when the request's own part is done (the turn in the request, or its
 * decisions taken); `afterId` is where its events begin.
 */
export function runStarter(deps: RunStartDeps) {
  const { database, dispatch } = deps;
  const { turns } = database;
  return async function startRun(caller: Caller, thread: ConversationDocument, body: RunBody, options: { background?: boolean } = {}): Promise<StartedRun> {
    const { enqueue } = checkRun(body, { hasQueue: deps.dispatcher !== undefined });
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
}
