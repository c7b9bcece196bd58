import { FINAL_EVENT_TYPES } from "../events/turn-event-types.js";
/** How long the queued turn may take to complete, the worker's cold start included. */
export const DEFAULT_SMOKE_TURN_TIMEOUT_MS = 120_000;
/** Between two reads of the queued turn. */
export const DEFAULT_SMOKE_POLL_MS = 2_000;

export interface SmokeOptions {
  /** The stage's API base URL (the stack's `ApiUrl` output). */
  apiUrl: string;
  /** A JWT the stage's authorizer accepts. */
  token: string;
  /** The stage's streaming URL (the `StreamingUrl` output): when set, one turn is also asked as an event stream there. */
  streamingUrl?: string;
  /** For the queued turn and the streamed one. Default: {@link DEFAULT_SMOKE_TURN_TIMEOUT_MS}. */
  turnTimeoutMs?: number;
  /** Default: {@link DEFAULT_SMOKE_POLL_MS}. */
  pollMs?: number;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** Waits between polls. Default: a timer; tests pass one they control. */
  sleep?: (ms: number) => Promise<void>;
}

/** One step of the smoke test: what it checked, whether it passed, and what was seen (statuses and ids, no answer text). */
export interface SmokeStep {
  step: "healthz" | "authenticated turn" | "queued turn" | "streamed turn";
  ok: boolean;
  detail: string;
}

const QUESTION = "Smoke test: reply with the word ok.";

/** The fields of the API's answers the smoke test reads (docs/api.md, "HTTP API (v1)"). */
interface ApiBody {
  conversationId?: string;
  turnId?: string;
  location?: string;
  status?: string;
  error?: { code?: string; message?: string };
}

/** One server-sent event as it arrived: which read of the body brought it, and when (ms after the request was sent). */
interface ArrivedEvent {
  event: string;
  data: { turnId?: string; code?: string };
  read: number;
  ms: number;
}

/**
 * Reads an event stream to its end, to its final event, or until the request's timeout aborts it,
 * noting each event's arrival: fields per line, events split by a blank line (the data of each is
 * one line of JSON, docs/streaming.md).
 */
async function readEvents(body: ReadableStream<Uint8Array>, started: number): Promise<{ events: ArrivedEvent[]; timedOut: boolean }> {
  const events: ArrivedEvent[] = [];
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (let read = 0; ; read += 1) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (error) {
      if (error instanceof Error && error.name === "TimeoutError") return { events, timedOut: true };
      throw error;
    }
    if (chunk.done) return { events, timedOut: false };
    buffered += decoder.decode(chunk.value, { stream: true });
    for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
      const lines = buffered.slice(0, end).split("\n");
      buffered = buffered.slice(end + 2);
      const field = (name: string) =>
        lines
          .find((l) => l.startsWith(`${name}:`))
          ?.slice(name.length + 1)
          .trim();
      const data = field("data");
      if (data === undefined) continue;
      const event = field("event") ?? "message";
      events.push({ event, data: JSON.parse(data), read, ms: Math.round(performance.now() - started) });
      if (FINAL_EVENT_TYPES.has(event)) {
        await reader.cancel();
        return { events, timedOut: false };
      }
    }
  }
}

/**
 * After a deploy: `/healthz`, one authenticated turn answered in the request, and one queued turn
 * the worker completes (the API, the authorizer, the model, MongoDB, the queue and the worker);
 * with a streaming URL, one turn asked there as an event stream (the `stream` function).
 * Each step runs whatever the previous one said, so one run names every broken part.
 */
export async function runSmoke(options: SmokeOptions): Promise<SmokeStep[]> {
  const http = options.fetch ?? fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const base = options.apiUrl.replace(/\/+$/, "");
  const call = async (method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) => {
    const response = await http(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${options.token}`, ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await response.text();
    return { status: response.status, json: text ? (JSON.parse(text) as ApiBody) : {} };
  };
  const attempt = async (step: SmokeStep["step"], run: () => Promise<Omit<SmokeStep, "step">>): Promise<SmokeStep> => {
    try {
      return { step, ...(await run()) };
    } catch (error) {
      return { step, ok: false, detail: `request failed: ${error instanceof Error ? error.message : String(error)}` };
    }
  };
  const failure = (what: string, res: { status: number; json: ApiBody }) => ({
    ok: false,
    detail: `${what}: ${res.status}${res.json.error?.code ? ` ${res.json.error.code}` : ""}${res.json.error?.message ? ` (${res.json.error.message})` : ""}`,
  });

  const health = await attempt("healthz", async () => {
    const res = await http(`${base}/healthz`);
    return res.status === 200 ? { ok: true, detail: "200" } : { ok: false, detail: `GET /healthz: ${res.status}` };
  });

  const conversation = async () => {
    const created = await call("POST", "/v1/conversations");
    if (created.status !== 201) return { error: failure("POST /v1/conversations", created) };
    return { id: String(created.json.conversationId) };
  };

  const sync = await attempt("authenticated turn", async () => {
    const c = await conversation();
    if ("error" in c) return c.error!;
    const res = await call("POST", `/v1/conversations/${c.id}/messages`, { body: { content: QUESTION } });
    if (res.status === 200) return { ok: true, detail: `200, turn ${res.json.turnId}` };
    // Past the API's deadline the turn goes to the worker: the API still answered as it should.
    if (res.status === 202) return { ok: true, detail: `202 (handed to the worker), turn ${res.json.turnId}` };
    return failure(`POST /v1/conversations/${c.id}/messages`, res);
  });

  const queued = await attempt("queued turn", async () => {
    const c = await conversation();
    if ("error" in c) return c.error!;
    const accepted = await call("POST", `/v1/conversations/${c.id}/messages`, { body: { content: QUESTION }, headers: { prefer: "respond-async" } });
    if (accepted.status !== 202) return failure(`POST /v1/conversations/${c.id}/messages (respond-async)`, accepted);
    const location = String(accepted.json.location);
    const timeoutMs = options.turnTimeoutMs ?? DEFAULT_SMOKE_TURN_TIMEOUT_MS;
    const pollMs = options.pollMs ?? DEFAULT_SMOKE_POLL_MS;
    let status = "queued";
    for (let waited = 0; waited <= timeoutMs; waited += pollMs) {
      const turn = await call("GET", location);
      if (turn.status !== 200) return failure(`GET ${location}`, turn);
      status = String(turn.json.status);
      if (status === "completed") return { ok: true, detail: `completed by the worker, turn ${accepted.json.turnId}` };
      if (status !== "queued" && status !== "running")
        return { ok: false, detail: `turn ${accepted.json.turnId} ${status}${turn.json.error?.code ? `: ${turn.json.error.code}` : ""}` };
      await sleep(pollMs);
    }
    return {
      ok: false,
      detail: `turn ${accepted.json.turnId} still ${status} after ${Math.round(timeoutMs / 1000)} s: see the dashboard and the worker's log`,
    };
  });

  if (!options.streamingUrl) return [health, sync, queued];
  const streamBase = options.streamingUrl.replace(/\/+$/, "");
  const streamed = await attempt("streamed turn", async () => {
    const c = await conversation();
    if ("error" in c) return c.error!;
    const url = `${streamBase}/v1/conversations/${c.id}/messages`;
    const what = `POST ${url}`;
    const timeoutMs = options.turnTimeoutMs ?? DEFAULT_SMOKE_TURN_TIMEOUT_MS;
    const started = performance.now();
    const response = await http(url, {
      method: "POST",
      headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ content: QUESTION }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.status !== 200) {
      const text = await response.text();
      let json: ApiBody = {};
      try {
        json = text ? (JSON.parse(text) as ApiBody) : {};
      } catch {
        // Not the API's error shape (a proxy's page): the status says enough.
      }
      return failure(what, { status: response.status, json });
    }
    const type = response.headers.get("content-type") ?? "no content type";
    if (!type.startsWith("text/event-stream") || !response.body) {
      await response.body?.cancel();
      return { ok: false, detail: `${what}: 200 with ${type}, not text/event-stream` };
    }
    const { events, timedOut } = await readEvents(response.body, started);
    const waited = `${timeoutMs / 1000} s`;
    const [first] = events;
    if (!first && timedOut) return { ok: false, detail: `${what}: no event within ${waited}` };
    if (first?.event !== "turn") return { ok: false, detail: `${what}: the stream began with ${first ? first.event : "nothing"}, not turn` };
    const turn = `turn ${first.data.turnId}`;
    const last = events.at(-1)!;
    if (last.event === "failed") return { ok: false, detail: `${turn} failed: ${last.data.code ?? "no code"}` };
    if (last.event === "approval_requested") return { ok: false, detail: `${turn} paused for an approval, the smoke question needs none` };
    if (timedOut) return { ok: false, detail: `${turn}: no done within ${waited} (${events.length} events)` };
    if (last.event !== "done") return { ok: false, detail: `${turn}: the stream ended after ${events.length} events without done` };
    if (events.length < 3) return { ok: false, detail: `${turn}: no event between turn and done` };
    // Through a buffering proxy every event arrives in the same read, at the end.
    if (first.read === last.read) return { ok: false, detail: `${turn}: every event arrived at once, at the end (${last.ms} ms): not streamed` };
    return { ok: true, detail: `200, ${turn}: first event after ${first.ms} ms, done after ${last.ms} ms (${events.length} events)` };
  });
  return [health, sync, queued, streamed];
}
