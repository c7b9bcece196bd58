import { runSmoke } from "../../lib/ops/index.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { startConverseEndpoint, type ConverseEndpoint, type ScriptedReply } from "../support/converse-endpoint.js";
import { openEventStream } from "../support/sse-client.js";

let api: TestServer;

beforeAll(async () => {
  api = await startTestServer();
});
afterAll(() => api.close());

/** Waits for the in-process worker instead of a timer: the poll after it sees the finished turn. */
const drained = () => api.server.turnQueue.drain();

describe("runSmoke", () => {
  it("returns every step passed against the local server: /healthz, a turn in the request, a turn the worker completes", async () => {
    const steps = await runSmoke({ apiUrl: `${api.url}/`, token: await api.token("smoke"), sleep: drained, pollMs: 1 });
    expect(steps).toEqual([
      { step: "healthz", ok: true, detail: "200" },
      { step: "authenticated turn", ok: true, detail: expect.stringMatching(/^200, turn [0-9a-f-]{36}$/) },
      { step: "queued turn", ok: true, detail: expect.stringMatching(/^completed by the worker, turn [0-9a-f-]{36}$/) },
    ]);
  });

  it("returns the turns failed with the API's status and error code when the token is refused, /healthz still passed", async () => {
    const steps = await runSmoke({ apiUrl: api.url, token: "not-a-jwt", sleep: drained, pollMs: 1 });
    expect(steps).toEqual([
      { step: "healthz", ok: true, detail: "200" },
      { step: "authenticated turn", ok: false, detail: expect.stringMatching(/^POST \/v1\/conversations: 401 unauthorized/) },
      { step: "queued turn", ok: false, detail: expect.stringMatching(/^POST \/v1\/conversations: 401 unauthorized/) },
    ]);
  });

  it("returns the queued turn failed when it does not finish in time", async () => {
    // A worker that never finishes: the turn stays queued for every poll.
    let polls = 0;
    const steps = await runSmoke({
      apiUrl: api.url,
      token: await api.token("smoke-slow"),
      turnTimeoutMs: 3,
      pollMs: 1,
      sleep: async () => void (polls += 1),
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (init?.method === "GET" && String(input).includes("/turns/")) return new Response(JSON.stringify({ status: "queued" }), { status: 200 });
        return response;
      },
    });
    expect(steps[2]).toEqual({ step: "queued turn", ok: false, detail: expect.stringMatching(/still queued after 0 s/) });
    expect(polls).toBe(4);
    await drained();
  });

  it("returns every step failed, naming the error, when nothing answers at the URL", async () => {
    const steps = await runSmoke({ apiUrl: "http://127.0.0.1:1", token: "t" });
    expect(steps.map((s) => [s.ok, s.detail.startsWith("request failed:")])).toEqual([
      [false, true],
      [false, true],
      [false, true],
    ]);
  });
});

describe("runSmoke with a streaming URL (the local server streams as the stream function does)", () => {
  let local: TestServer;
  let converse: ConverseEndpoint;
  /** Set while the smoke's event stream is open: the model answers with `reply` once the client has read the stream's first chunk. */
  let streamed: { firstRead: Promise<void>; reply: ScriptedReply } | undefined;
  /** The streamed turn's location, from its `turn` event. */
  let location: string | undefined;

  beforeAll(async () => {
    converse = await startConverseEndpoint({
      respond: async () => {
        if (!streamed) return { text: "ok" };
        await streamed.firstRead;
        return streamed.reply;
      },
    });
    for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
    local = await startTestServer({ MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "m" });
  });
  afterEach(() => {
    streamed = undefined;
    location = undefined;
  });
  afterAll(async () => {
    await local?.close();
    await converse?.close();
    vi.unstubAllEnvs();
  });

  /**
   * The global fetch; the event-stream request's body is passed through `rewrite` (each chunk as
   * it comes) or, with `whole`, handed over in one piece once it ended, as a buffering proxy would.
   * The model answers that request once its first chunk was read, or, with `hold`, once `hold` settles.
   */
  function watchedFetch(reply: ScriptedReply, body: { whole?: boolean; rewrite?: (chunk: string) => string; hold?: Promise<void> } = {}): typeof fetch {
    return async (input, init) => {
      if (new Headers(init?.headers).get("accept") !== "text/event-stream") return fetch(input, init);
      let release: (() => void) | undefined;
      streamed = { firstRead: body.hold ?? new Promise((resolve) => (release = resolve)), reply };
      if (body.whole) release?.();
      const response = await fetch(input, init);
      if (body.whole) return new Response(await response.text(), { status: response.status, headers: response.headers });
      const rewrite = body.rewrite ?? ((chunk: string) => chunk);
      const decoder = new TextDecoder();
      const encoder = new TextEncoder();
      const passed = response.body!.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            const text = decoder.decode(chunk, { stream: true });
            location ??= /"location":"([^"]+)"/.exec(text)?.[1];
            controller.enqueue(encoder.encode(rewrite(text)));
            release?.();
          },
        }),
      );
      return new Response(passed, { status: response.status, headers: response.headers });
    };
  }

  const smoke = async (fetcher: typeof fetch, streamingUrl = `${local.url}/`, turnTimeoutMs?: number) =>
    runSmoke({
      turnTimeoutMs,
      apiUrl: local.url,
      streamingUrl,
      token: await local.token("smoke-stream"),
      sleep: () => local.server.turnQueue.drain(),
      pollMs: 1,
      fetch: fetcher,
    });

  it("returns the streamed turn passed with the time to its first event when turn, the model's events and done arrive one by one", async () => {
    const steps = await smoke(watchedFetch({ text: "ok, streamed" }));
    expect(steps.map((s) => [s.step, s.ok])).toEqual([
      ["healthz", true],
      ["authenticated turn", true],
      ["queued turn", true],
      ["streamed turn", true],
    ]);
    expect(steps[3].detail).toMatch(/^200, turn [0-9a-f-]{36}: first event after \d+ ms, done after \d+ ms \(\d+ events\)$/);
    expect(steps[3].detail).not.toContain("streamed");
  });

  it("returns the streamed turn failed as not streamed when every event arrives at once, at the end", async () => {
    const steps = await smoke(watchedFetch({ text: "ok" }, { whole: true }));
    expect(steps[3]).toEqual({
      step: "streamed turn",
      ok: false,
      detail: expect.stringMatching(/^turn [0-9a-f-]{36}: every event arrived at once, at the end \(\d+ ms\): not streamed$/),
    });
  });

  it("returns the streamed turn failed with the failed event's code when the model breaks off mid-stream", async () => {
    const reply: ScriptedReply = { text: "This will not finish", streamError: { type: "modelStreamErrorException", message: "stopped", afterDeltas: 1 } };
    const steps = await smoke(watchedFetch(reply));
    expect(steps[3]).toEqual({ step: "streamed turn", ok: false, detail: expect.stringMatching(/^turn [0-9a-f-]{36} failed: model_unreachable$/) });
  });

  it("returns the streamed turn failed when the stream ends without done", async () => {
    const steps = await smoke(watchedFetch({ text: "ok" }, { rewrite: (chunk) => chunk.replace(/(id: \d+\n)?event: done\ndata: .*\n\n/, "") }));
    expect(steps[3]).toEqual({
      step: "streamed turn",
      ok: false,
      detail: expect.stringMatching(/^turn [0-9a-f-]{36}: the stream ended after \d+ events without done$/),
    });
  });

  it("returns the streamed turn failed, naming it, when no done comes within the timeout", async () => {
    let answer!: () => void;
    const hold = new Promise<void>((resolve) => (answer = resolve));
    // The model answers only after the smoke gave up on the stream.
    const steps = await smoke(watchedFetch({ text: "too late" }, { hold }), `${local.url}/`, 1_000);
    expect(steps[3]).toEqual({ step: "streamed turn", ok: false, detail: expect.stringMatching(/^turn [0-9a-f-]{36}: no done within 1 s \(\d+ events\)$/) });
    answer();
    // The turn runs on without its client: followed to its end, so it finishes before the next test.
    const token = await local.token("smoke-stream");
    const rest = await (await openEventStream(`${local.url}${location}/events`, { headers: { authorization: `Bearer ${token}` } })).rest();
    expect(rest.at(-1)).toMatchObject({ event: "done", data: { answer: "too late" } });
  });

  it("returns the streamed turn failed with the status and error code when the streaming URL answers no stream", async () => {
    const steps = await smoke(watchedFetch({ text: "ok" }), `${local.url}/elsewhere/`);
    expect(steps[3]).toEqual({
      step: "streamed turn",
      ok: false,
      detail: expect.stringMatching(/^POST http:\/\/127\.0\.0\.1:\d+\/elsewhere\/v1\/conversations\/[^/]+\/messages: 404 not_found/),
    });
  });
});
