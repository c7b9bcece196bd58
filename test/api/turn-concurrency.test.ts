import type { BaseMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MAX_RETRY_AFTER_S } from "../../lib/store/index.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { startTestServer, type ApiResponse, type TestServer } from "../support/api-client.js";
import { defaultResponder, lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";

let api: TestServer;
let token: string;
let converse: ConverseEndpoint;

/**
 * Explicit synchronisation instead of timing: a question containing "hold" keeps the model call
 * open until the test releases it, so a turn is known to be running (and holding the conversation)
 * while the test sends the requests that must meet it.
 */
let held: { entered: Promise<void>; release(): void; calls: number; second: Promise<void> } | undefined;

function holdNextTurn(): NonNullable<typeof held> {
  let enter = () => {};
  let release = () => {};
  let again = () => {};
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const second = new Promise<void>((resolve) => (again = resolve));
  const state = { entered, release, calls: 0, second, enter, released, again };
  held = state;
  return state;
}

beforeAll(async () => {
  converse = await startConverseEndpoint({
    respond: async (request, context) => {
      const state = held as (NonNullable<typeof held> & { enter(): void; again(): void; released: Promise<void> }) | undefined;
      if (state && lastUserText(request).includes("hold")) {
        state.calls += 1;
        if (state.calls === 1) state.enter();
        else state.again();
        await state.released;
      }
      return defaultResponder(request, context);
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  api = await startTestServer({ MODEL_PROVIDER: "bedrock" });
  token = await api.token("alice");
});
afterAll(async () => {
  await api?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

/** Resolves once `count` of the responses have arrived, with those responses. */
function firstAnswered(posts: Promise<ApiResponse>[], count: number): Promise<ApiResponse[]> {
  const answered: ApiResponse[] = [];
  return new Promise((resolve) => {
    for (const post of posts) {
      void post.then((response) => {
        answered.push(response);
        if (answered.length === count) resolve([...answered]);
      });
    }
  });
}

async function newConversation(): Promise<string> {
  return (await api.call("POST", "/v1/conversations", { token })).body.conversationId;
}

describe("POST /v1/conversations/{id}/messages", () => {
  it("answers 409 to every post while a turn holds the conversation, runs one turn, and the thread stays linear", async () => {
    const id = await newConversation();
    const holding = holdNextTurn();
    const posts = Array.from({ length: 12 }, (_, i) =>
      api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: `hold question ${i}` } }),
    );
    await holding.entered;
    // Eleven answers must come while one turn is held in the model; a second turn reaching the model fails at once.
    const early = await Promise.race([firstAnswered(posts, 11), holding.second.then(() => "a second turn reached the model")]);
    expect(early).not.toBe("a second turn reached the model");
    holding.release();
    const all = await Promise.all(posts);
    held = undefined;

    expect(holding.calls).toBe(1);
    const conflicts = early as ApiResponse[];
    expect(conflicts.map((c) => c.status)).toEqual(Array(11).fill(409));
    for (const c of conflicts) {
      expect(c.body.error.code).toBe("conflict");
      expect(c.headers.get("retry-after")).toBe(String(MAX_RETRY_AFTER_S));
    }
    const ok = all.filter((p) => p.status === 200);
    expect(ok).toHaveLength(1);

    const record = (await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages;
    expect(record.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    const state = await api.server.app.database.checkpointer.getTuple({ configurable: { thread_id: id } });
    const messages = state?.checkpoint.channel_values.messages as BaseMessage[];
    expect(messages.map((m) => m.getType())).toEqual(["human", "ai"]);
    const turnsRecorded = await api.db.collection(COLLECTIONS.turns).countDocuments({ conversationId: id, status: "completed" });
    expect(turnsRecorded).toBe(1);
  });

  it("runs turns posted one after another, each in the one thread in order", async () => {
    const id = await newConversation();
    for (const content of ["first", "second", "third"]) {
      expect((await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content } })).status).toBe(200);
    }
    const state = await api.server.app.database.checkpointer.getTuple({ configurable: { thread_id: id } });
    const messages = state?.checkpoint.channel_values.messages as BaseMessage[];
    expect(messages.filter((m) => m.getType() === "human").map((m) => m.content)).toEqual(["first", "second", "third"]);
  });

  describe("with an Idempotency-Key", () => {
    it("returns the first response to a repeat and runs the turn once", async () => {
      const id = await newConversation();
      const send = () => api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" }, headers: { "idempotency-key": "k-1" } });
      const first = await send();
      const again = await send();
      expect(first.status).toBe(200);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect((await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages).toHaveLength(2);
    });

    it("answers 409 to a repeat while the first is in progress, then the first's answer once it is done", async () => {
      const id = await newConversation();
      const send = () =>
        api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hold hello" }, headers: { "idempotency-key": "k-2" } });
      const holding = holdNextTurn();
      const first = send();
      await holding.entered;
      const repeat = await send();
      holding.release();
      const done = await first;
      held = undefined;

      expect(repeat.status).toBe(409);
      expect(repeat.body.error.code).toBe("conflict");
      expect(done.status).toBe(200);
      const after = await send();
      expect(after.status).toBe(200);
      expect(after.body).toEqual(done.body);
      expect(holding.calls).toBe(1);
      expect((await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages).toHaveLength(2);
    });

    it("answers 422 when the key is reused with another body, and changes nothing", async () => {
      const id = await newConversation();
      await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" }, headers: { "idempotency-key": "k-3" } });
      const reused = await api.call("POST", `/v1/conversations/${id}/messages`, {
        token,
        json: { content: "something else" },
        headers: { "idempotency-key": "k-3" },
      });
      expect(reused.status).toBe(422);
      expect(reused.body.error.code).toBe("idempotency_key_reused");
      expect((await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages).toHaveLength(2);
    });

    it("does not share a key between users", async () => {
      const id = await newConversation();
      const bob = await api.token("bob");
      const bobs = await newConversationFor(bob);
      const a = await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" }, headers: { "idempotency-key": "shared" } });
      const b = await api.call("POST", `/v1/conversations/${bobs}/messages`, {
        token: bob,
        json: { content: "hello" },
        headers: { "idempotency-key": "shared" },
      });
      expect(b.status).toBe(200);
      expect(b.body.turnId).not.toBe(a.body.turnId);
    });
  });
});

async function newConversationFor(t: string): Promise<string> {
  return (await api.call("POST", "/v1/conversations", { token: t })).body.conversationId;
}
