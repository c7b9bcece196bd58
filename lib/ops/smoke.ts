/** How long the queued turn may take to complete, the worker's cold start included. */
export const DEFAULT_SMOKE_TURN_TIMEOUT_MS = 120_000;
/** Between two reads of the queued turn. */
export const DEFAULT_SMOKE_POLL_MS = 2_000;

export interface SmokeOptions {
  /** The stage's API base URL (the stack's `ApiUrl` output). */
  apiUrl: string;
  /** A JWT the stage's authorizer accepts. */
  token: string;
  /** Default: {@link DEFAULT_SMOKE_TURN_TIMEOUT_MS}. */
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
  step: "healthz" | "authenticated turn" | "queued turn";
  ok: boolean;
  detail: string;
}

const QUESTION = "Smoke test: reply with the word ok.";

/** The fields of the API's answers the smoke test reads (README, "HTTP API (v1)"). */
interface ApiBody {
  conversationId?: string;
  turnId?: string;
  location?: string;
  status?: string;
  error?: { code?: string; message?: string };
}

/**
 * After a deploy: `/healthz`, one authenticated turn answered in the request, and one queued turn
 * the worker completes (the API, the authorizer, the model, MongoDB, the queue and the worker).
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

  return [health, sync, queued];
}
