import { defaultResponder } from "../support/converse-endpoint.js";
import { jwtClaims, sqsEvent, sqsRecord } from "./support/events.js";
import { emfOf } from "./support/emf.js";
import { startHarness, type Harness } from "./support/harness.js";

let h: Harness;
const alice = jwtClaims("alice", { tenant: "acme" });
const bob = jwtClaims("bob", { tenant: "acme" });

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

async function newConversation(claims = alice): Promise<string> {
  const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims });
  expect(created.status).toBe(201);
  return created.json.conversationId as string;
}

const postMessage = (id: string, content: string, extra: { headers?: Record<string, string>; base64?: boolean; claims?: Record<string, string> } = {}) =>
  h.api({
    method: "POST",
    path: `/v1/conversations/${id}/messages`,
    routeKey: "POST /v1/conversations/{id}/messages",
    claims: extra.claims ?? alice,
    body: { content },
    headers: extra.headers,
    base64: extra.base64,
  });

const getTurn = (id: string, turnId: string) =>
  h.api({ method: "GET", path: `/v1/conversations/${id}/turns/${turnId}`, routeKey: "GET /v1/conversations/{id}/turns/{turnId}", claims: alice });

describe("functions/api", () => {
  describe("handler", () => {
    it("returns 200 on /healthz without a token", async () => {
      const res = await h.api({ method: "GET", path: "/healthz", routeKey: "GET /healthz" });
      expect(res).toMatchObject({ status: 200, json: { status: "ok" } });
    });

    it("returns 401 when API Gateway passed no verified claims", async () => {
      const res = await h.api({ method: "GET", path: "/v1/conversations", routeKey: "GET /v1/conversations" });
      expect(res.status).toBe(401);
    });

    it("returns 401 naming the claim when the tenant claim arrives as a list or empty, and reads nothing", async () => {
      // API Gateway hands a list claim over as "[a b]"; it once counted as "no tenant" and read no-tenant conversations.
      const noTenant = jwtClaims("alice");
      const mine = await newConversation(noTenant);
      for (const tenant of ["[acme globex]", "[]", ""]) {
        const claims = jwtClaims("alice", { tenant });
        const listed = await h.api({ method: "GET", path: "/v1/conversations", routeKey: "GET /v1/conversations", claims });
        expect(listed).toMatchObject({
          status: 401,
          json: { error: { code: "unauthorized", message: "the tenant claim must be a non-empty string when present" } },
        });
        const read = await h.api({ method: "GET", path: `/v1/conversations/${mine}`, routeKey: "GET /v1/conversations/{id}", claims });
        expect(read.status).toBe(401);
      }
    });

    it("returns the caller's conversations when the roles claim arrives as a list", async () => {
      const claims = jwtClaims("carol", { tenant: "acme", roles: "[analyst finance]" });
      const id = await newConversation(claims);
      const listed = await h.api({ method: "GET", path: "/v1/conversations", routeKey: "GET /v1/conversations", claims });
      expect(listed.json.conversations.map((c: { conversationId: string }) => c.conversationId)).toEqual([id]);
    });

    it("returns the answer of a sync turn with the model's usage", async () => {
      const id = await newConversation();
      const res = await postMessage(id, "What is the capital of France?");
      expect(res.status).toBe(200);
      expect(res.json.answer).toContain("What is the capital of France?");
      expect(res.json.usage.inputTokens).toBeGreaterThan(0);
      expect(h.converse.requests.at(-1)?.status).toBe(200);
    });

    it("returns 503 model_credentials for a sync turn the model refuses, and publishes it as a failed turn by reason", async () => {
      const id = await newConversation();
      h.converse.setResponder(() => ({
        error: { status: 403, type: "AccessDeniedException", message: "You don't have access to the model with the specified model ID." },
      }));
      let res;
      const emf = await emfOf(async () => (res = await postMessage(id, "denied question"))).finally(() => h.converse.setResponder(defaultResponder));
      expect(res!.status).toBe(503);
      const failed = emf.filter((l) => l.TurnsFailed === 1);
      expect(failed.map((l) => l.reason)).toEqual(["model_denied", undefined]);
    });

    it("returns 503 model_busy for a sync turn Bedrock throttles, counted as failed but not against the version, nor as its server error", async () => {
      const id = await newConversation();
      h.converse.setResponder(() => ({ error: { status: 429, type: "ThrottlingException", message: "Too many requests, please wait before trying again." } }));
      let res;
      const emf = await emfOf(async () => (res = await postMessage(id, "busy question"))).finally(() => h.converse.setResponder(defaultResponder));
      expect(res!.status).toBe(503);
      expect(res!.headers["retry-after"]).toBe("10");
      expect(res!.json.error).toMatchObject({ code: "model_busy", reason: "ThrottlingException (HTTP 429)" });
      expect(emf.filter((l) => l.TurnsFailed === 1).map((l) => l.reason)).toEqual(["throttled", undefined]);
      expect(emf.filter((l) => "VersionTurnsFailed" in l || "VersionServerErrors" in l)).toEqual([]);
    });

    it("publishes a 502 model failure against the function's version, for the canary's rollback alarms", async () => {
      const id = await newConversation();
      h.converse.setResponder(() => ({ error: { status: 400, type: "ValidationException", message: "The model rejected the request." } }));
      let res;
      const emf = await emfOf(async () => (res = await postMessage(id, "refused question"))).finally(() => h.converse.setResponder(defaultResponder));
      expect(res!.status).toBe(502);
      const versioned = emf.filter((l) => "VersionTurnsFailed" in l || "VersionServerErrors" in l);
      expect(versioned).toEqual([
        expect.objectContaining({ function: "test-threadwise-api", version: "$LATEST", VersionTurnsFailed: 1 }),
        expect.objectContaining({ function: "test-threadwise-api", version: "$LATEST", VersionServerErrors: 1 }),
      ]);
    });

    it("returns the answer for a base64-encoded body", async () => {
      const id = await newConversation();
      const res = await postMessage(id, "encoded question", { base64: true });
      expect(res.status).toBe(200);
      expect(res.json.answer).toContain("encoded question");
    });

    it("returns 404 for another user's conversation", async () => {
      const id = await newConversation(alice);
      const res = await h.api({ method: "GET", path: `/v1/conversations/${id}`, routeKey: "GET /v1/conversations/{id}", claims: bob });
      expect(res.status).toBe(404);
    });

    it("returns 202 for an async turn, and the worker finishes it", async () => {
      const id = await newConversation();
      const before = h.aws.sent.length;
      const accepted = await postMessage(id, "answer me later", { headers: { prefer: "respond-async" } });
      expect(accepted.status).toBe(202);
      expect(accepted.headers.location).toBe(`/v1/conversations/${id}/turns/${accepted.json.turnId}`);
      expect((await getTurn(id, accepted.json.turnId)).json.status).toBe("queued");

      const [message] = h.aws.sent.slice(before);
      expect(message.queueUrl).toBe(h.aws.queueUrl);
      expect(JSON.parse(message.body)).toMatchObject({ channel: "api", conversationKey: id, dedupeId: accepted.json.turnId });
      const result = await h.worker(sqsEvent(sqsRecord(message)));
      expect(result.batchItemFailures).toEqual([]);

      const turn = await getTurn(id, accepted.json.turnId);
      expect(turn.json).toMatchObject({ status: "completed", answer: expect.stringContaining("answer me later") });
    });

    it("puts every turn of one conversation in one message group", async () => {
      const id = await newConversation();
      const before = h.aws.sent.length;
      await postMessage(id, "first", { headers: { prefer: "respond-async" } });
      await h.worker(sqsEvent(sqsRecord(h.aws.sent[before])));
      await postMessage(id, "second", { headers: { prefer: "respond-async" } });
      const [first, second] = h.aws.sent.slice(before);
      expect(second.groupId).toBe(first.groupId);
      expect(second.deduplicationId).not.toBe(first.deduplicationId);
    });
  });
});
