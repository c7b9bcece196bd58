import { lastUserText } from "../support/converse-endpoint.js";
import { jwtClaims, sqsEvent, sqsRecord } from "./support/events.js";
import { startHarness, type Harness } from "./support/harness.js";

/** The deadline of this file's API function; the first model call takes longer than it. */
const DEADLINE_MS = 300;
const SLOW_MODEL_MS = 1_500;

let h: Harness;
const alice = jwtClaims("alice");

beforeAll(async () => {
  h = await startHarness({
    // As the stack sets it: API Gateway cuts a response at 30 s, so the request's hard limit aborts the call under way.
    env: { SYNC_TURN_DEADLINE_MS: String(DEADLINE_MS), SYNC_TURN_MAX_MS: String(DEADLINE_MS) },
    converse: {
      respond: async (request) => {
        if (lastUserText(request).includes("slow")) await new Promise((resolve) => setTimeout(resolve, SLOW_MODEL_MS));
        return { text: `answer to: ${lastUserText(request)}` };
      },
    },
  });
});
afterAll(async () => h?.close());

describe("functions/api with a turn that overruns its deadline", () => {
  describe("handler", () => {
    it("returns 202 at the deadline, and the worker completes the turn once", async () => {
      const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
      const id = created.json.conversationId as string;
      // A first turn warms the container: building the tokenizer's tables blocks for a second or so,
      // past this deadline, so it too is finished by the worker.
      const warm = await h.api({
        method: "POST",
        path: `/v1/conversations/${id}/messages`,
        routeKey: "POST /v1/conversations/{id}/messages",
        claims: alice,
        body: { content: "hello" },
      });
      if (warm.status === 202) await h.worker(sqsEvent(sqsRecord(h.aws.sent[0])));
      const before = h.aws.sent.length;
      const started = Date.now();
      const accepted = await h.api({
        method: "POST",
        path: `/v1/conversations/${id}/messages`,
        routeKey: "POST /v1/conversations/{id}/messages",
        claims: alice,
        body: { content: "a slow question" },
      });
      expect(accepted.status).toBe(202);
      expect(Date.now() - started).toBeLessThan(SLOW_MODEL_MS);
      const turnPath = {
        method: "GET",
        path: `/v1/conversations/${id}/turns/${accepted.json.turnId}`,
        routeKey: "GET /v1/conversations/{id}/turns/{turnId}",
        claims: alice,
      };
      expect((await h.api(turnPath)).json.status).toBe("queued");

      expect(h.aws.sent).toHaveLength(before + 1);
      const message = h.aws.sent[before];
      const result = await h.worker(sqsEvent(sqsRecord(message)));
      expect(result.batchItemFailures).toEqual([]);

      const turn = await h.api(turnPath);
      expect(turn.json).toMatchObject({ status: "completed", answer: "answer to: a slow question", error: null });
      const record = await h.api({ method: "GET", path: `/v1/conversations/${id}/messages`, routeKey: "GET /v1/conversations/{id}/messages", claims: alice });
      expect(record.json.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      // The worker's model call carried the user's question once: the turn resumed, it was not started again.
      const last = h.converse.requests.at(-1)!.body!;
      expect(last.messages.filter((m) => JSON.stringify(m.content).includes("a slow question"))).toHaveLength(1);
    });
  });
});
