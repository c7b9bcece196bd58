import { startTestServer, type TestServer } from "../support/api-client.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";

/** Roomy enough that a quick turn finishes within it on a loaded machine; a slow one is held past it (below). */
const DEADLINE_MS = 2_000;
/** The request's hard limit (`SYNC_TURN_MAX_MS`, as API Gateway's cap in AWS): only past it is a model call under way aborted. */
const MAX_SYNC_MS = 6_000;
/** A model call that is still under way at the deadline and ends well before the hard limit. */
const LONG_CALL_MS = DEADLINE_MS + 1_500;

/** A question asking for slowness is held in the model until the test has seen its 202: no guessed durations. */
let releaseSlow = () => {};
let slowReleased = Promise.resolve();
function holdSlowTurns(): () => void {
  slowReleased = new Promise<void>((resolve) => (releaseSlow = resolve));
  return releaseSlow;
}

let converse: ConverseEndpoint;
let t: TestServer;
let token: string;

beforeAll(async () => {
  converse = await startConverseEndpoint({
    respond: async (request) => {
      const text = lastUserText(request);
      if (text.includes("slowly")) await slowReleased;
      if (text.includes("at length")) await new Promise((resolve) => setTimeout(resolve, LONG_CALL_MS));
      return { text: `answer to: ${text}` };
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  t = await startTestServer({ MODEL_PROVIDER: "bedrock", SYNC_TURN_DEADLINE_MS: String(DEADLINE_MS), SYNC_TURN_MAX_MS: String(MAX_SYNC_MS) });
  token = await t.token("alice", { tenant: "acme" });
});

afterAll(async () => {
  await t?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

async function conversation(): Promise<string> {
  return (await t.call("POST", "/v1/conversations", { token })).body.conversationId;
}

describe("local server: API turns through the in-process queue", () => {
  describe("POST /v1/conversations/{id}/messages", () => {
    it("returns 202 for Prefer: respond-async, and the worker completes the turn", async () => {
      const id = await conversation();
      const accepted = await t.call("POST", `/v1/conversations/${id}/messages`, {
        token,
        json: { content: "answer me later" },
        headers: { prefer: "respond-async" },
      });
      expect(accepted.status).toBe(202);
      expect(accepted.body).toMatchObject({ status: "queued", location: `/v1/conversations/${id}/turns/${accepted.body.turnId}` });
      await t.server.turnQueue.drain();
      const turn = await t.call("GET", accepted.body.location, { token });
      expect(turn.body).toMatchObject({ status: "completed", answer: "answer to: answer me later" });
    });

    it("returns 200 with the answer of a model call under way at the deadline, made once: finished and used, not aborted and made again", async () => {
      const id = await conversation();
      const asked = () => converse.requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes("answer at length")).length;
      const answered = await t.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "answer at length" } });
      expect(answered.status).toBe(200);
      expect(answered.body.answer).toBe("answer to: answer at length");
      await t.server.turnQueue.drain();
      expect(asked()).toBe(1);
      const record = await t.call("GET", `/v1/conversations/${id}/messages`, { token });
      expect(record.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    });

    it("returns 202 when a model call outlives the request's hard limit, and the worker finishes the turn with the question recorded once", async () => {
      const id = await conversation();
      const release = holdSlowTurns();
      const accepted = await t.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "think slowly" } });
      release();
      expect(accepted.status).toBe(202);
      await t.server.turnQueue.drain();
      const turn = await t.call("GET", accepted.body.location, { token });
      expect(turn.body).toMatchObject({ status: "completed", answer: "answer to: think slowly" });
      const record = await t.call("GET", `/v1/conversations/${id}/messages`, { token });
      expect(record.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
        ["user", "think slowly"],
        ["assistant", "answer to: think slowly"],
      ]);
    });

    it("returns 200 with the answer when the turn finishes within the deadline", async () => {
      const id = await conversation();
      const answered = await t.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "quick one" } });
      expect(answered.status).toBe(200);
      expect(answered.body.answer).toBe("answer to: quick one");
    });
  });
});
