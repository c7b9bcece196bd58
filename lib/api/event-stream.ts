import { isFinalEvent, type TurnEvent } from "../events/turn-event-types.js";
import type { TurnEventFollower } from "../events/turn-event-follower.js";
import type { TurnEventHub } from "../events/turn-event-hub.js";
import { NotAcceptableError, NotFoundError, ValidationError } from "../errors.js";
import { errorResponse } from "./error-response.js";
import type { HttpRequest, HttpResponse } from "./http.js";

const EVENT_STREAM = "text/event-stream";
/** Digits of the largest `Last-Event-ID` taken: ids count a turn's events. */
const MAX_EVENT_ID_DIGITS = 9;

/**
 * Refuses an event stream where the adapter cannot write one as it comes (it would arrive whole,
 * at the end), naming where the same route streams when the deployment has told it (`STREAMING_URL`).
 */
export function assertCanStream(request: HttpRequest, streamingUrl?: string): void {
  if (!request.canStream) {
    const where = streamingUrl ? `the streaming URL ${streamingUrl}` : "the streaming URL";
    throw new NotAcceptableError(`this endpoint does not stream; use ${where}, or ask without Accept: text/event-stream (docs/streaming.md)`);
  }
}

/** A media range's weight (`q`, RFC 9110 §12.4.2): 1 without one, 0 for a malformed one. */
function weightOf(params: readonly string[]): number {
  const q = params.find((p) => /^\s*q\s*=/i.test(p));
  if (q === undefined) return 1;
  const value = q.slice(q.indexOf("=") + 1).trim();
  return /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value) ? Number(value) : 0;
}

/**
 * Whether the request asks for server-sent events (`Accept: text/event-stream` with a weight above 0),
 * split into media ranges rather than searched.
 */
export function wantsEventStream(request: HttpRequest, streamingUrl?: string): boolean {
  const accept = request.headers.accept;
  if (accept === undefined) return false;
  const wanted = accept.split(",").some((range) => {
    const [type, ...params] = range.split(";");
    return type.trim().toLowerCase() === EVENT_STREAM && weightOf(params) > 0;
  });
  if (wanted) assertCanStream(request, streamingUrl);
  return wanted;
}

/** The id of the last event the client saw (`Last-Event-ID`); 0, from the start, without one. */
export function lastEventId(request: HttpRequest): number {
  const raw = request.headers["last-event-id"]?.trim();
  if (raw === undefined || raw === "") return 0;
  if (!/^\d+$/.test(raw) || raw.length > MAX_EVENT_ID_DIGITS) {
    throw new ValidationError("Last-Event-ID is not an event id", [{ path: "Last-Event-ID", message: "an id of this turn's stream (digits)" }]);
  }
  return Number(raw);
}

/**
 * Returns once the turn this request runs has begun here (its first event in this process's hub)
 * or its run has settled (queued for the worker, or found finished); throws the run's error when it
 * was refused before its first event, so a conflict with a running turn is the usual 409 with
 * `Retry-After`, not a stream naming a turn that never ran.
 */
export async function turnBegun(hub: TurnEventHub, turnId: string, running: Promise<unknown>): Promise<void> {
  const first = hub.next(turnId);
  try {
    if (hub.lastId(turnId) === 0) await Promise.race([first.promise, running]);
  } finally {
    first.cancel();
  }
}

/** One server-sent event; the data is one line of JSON, so it never needs splitting. */
function frame(event: string, data: unknown, id?: number): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function eventFrame(event: TurnEvent): string {
  const { id, type, ...data } = event;
  return frame(type, data, id);
}

/**
 * The `failed` event for an error that stopped the request before the turn said anything (a
 * conflict, an unreachable database). Without an id: the turn's own ids are not this request's to take.
 */
function failureFrame(error: unknown): string {
  const { error: body } = JSON.parse(errorResponse(error).body) as { error: { code: string; message: string } };
  return frame("failed", { code: body.code, message: body.message });
}

export interface TurnStreamOptions {
  events: TurnEventFollower;
  turnId: string;
  conversationId: string;
  /** Events after this id only (a reconnect). */
  afterId: number;
  /** The turn's run, when this request started it: an error before the turn's own `failed` ends the stream as `failed`. */
  running?: Promise<unknown>;
  /** Called once when the stream ends, however it ends (gives back the principal's stream, `StreamLimiter`). */
  onClose?: () => void;
  /**
   * Asked before each event: whether the caller may still read the conversation (a member can be
   * removed while it follows). False ends the stream with a `failed` event `not_found`, and nothing
   * more of the turn is sent. Default: the caller stays allowed (its owner).
   */
  stillAllowed?: () => Promise<boolean>;
}

/**
 * A turn's events as server-sent events: a `turn` event naming it, then its events until `done`,
 * `failed` or `approval_requested` (docs/streaming.md). A client that goes away stops only its stream; the turn goes on.
 */
export function turnEventStream(options: TurnStreamOptions): HttpResponse {
  const { events, turnId, conversationId, afterId, running, onClose, stillAllowed } = options;
  const revoked = () => failureFrame(new NotFoundError(`conversation ${conversationId} not found`));
  const location = `/v1/conversations/${conversationId}/turns/${turnId}`;
  let failure: { error: unknown } | undefined;
  const failed = new AbortController();
  running?.catch((error: unknown) => {
    failure = { error };
    failed.abort();
  });
  async function* stream(signal: AbortSignal): AsyncGenerator<string> {
    try {
      yield* frames(signal);
    } finally {
      onClose?.();
    }
  }
  async function* frames(signal: AbortSignal): AsyncGenerator<string> {
    yield frame("turn", { turnId, conversationId, location });
    let last = afterId;
    try {
      for await (const event of events.follow(turnId, afterId, AbortSignal.any([signal, failed.signal]))) {
        if (stillAllowed && !(await stillAllowed())) {
          yield revoked();
          return;
        }
        yield eventFrame(event);
        last = event.id;
        if (isFinalEvent(event)) return;
      }
    } catch (error) {
      // The store could not be read (the database away): the stream ends as the API would answer
      // (503 service_unavailable), never cut; the client reconnects with Last-Event-ID.
      if (signal.aborted) return;
      yield failureFrame(error);
      return;
    }
    if (!failure || signal.aborted) return;
    // The runner publishes its `failed` before it throws: what this process has of the turn comes first.
    if (stillAllowed && !(await stillAllowed())) {
      yield revoked();
      return;
    }
    for (const event of events.hub.after(turnId, last)) {
      yield eventFrame(event);
      last = event.id;
      if (isFinalEvent(event)) return;
    }
    yield failureFrame(failure.error);
  }
  return {
    status: 200,
    headers: { "content-type": `${EVENT_STREAM}; charset=utf-8`, "cache-control": "no-cache", "x-accel-buffering": "no", location },
    body: "",
    stream,
    // A failure is the stream's to tell (the `failed` event above), not the adapter's.
    ...(running && {
      settled: running.then(
        () => undefined,
        () => undefined,
      ),
    }),
  };
}
