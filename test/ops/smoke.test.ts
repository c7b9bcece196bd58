import { runSmoke } from "../../lib/ops/index.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

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
