import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_METADATA_KEYS } from "../../lib/store/conversation-store.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

/**
 * The Agent Protocol's threads from the attacker's side (issue 41, rows 10 and 12), over HTTP with
 * signed tokens: metadata cannot grow a thread past its caps, and a taken `thread_id` tells another
 * principal nothing about the thread that holds it.
 */

let t: TestServer;
let ada: string;
let gil: string;

beforeAll(async () => {
  t = await startTestServer();
  [ada, gil] = await Promise.all([t.token("ada", { tenant: "acme" }), t.token("gil", { tenant: "globex" })]);
});
afterAll(() => t?.close());

const stored = (id: string) => t.db.collection("conversations").findOne({ _id: id as never });
const keys = (prefix: string, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, "x".repeat(1_000)]));

describe("Agent Protocol threads at the tenant boundary", () => {
  describe("PATCH /threads/{thread_id}", () => {
    it("returns 400 for 100 PATCHes of 32 new keys each, and the thread keeps its one key", async () => {
      const thread = (await t.call("POST", "/threads", { token: ada, json: { metadata: { project: "alpha" } } })).body;
      for (let i = 0; i < 100; i++) {
        const patched = await t.call("PATCH", `/threads/${thread.thread_id}`, { token: ada, json: { metadata: keys(`p${i}_`, 32) } });
        expect(patched.status).toBe(400);
        expect(patched.body.error.message).toContain("at most 32 keys");
      }
      expect((await stored(thread.thread_id))?.metadata).toEqual({ project: "alpha" });
    });

    it("stops 100 PATCHes of one new key each at 32 keys: the rest are 400 and write nothing", async () => {
      const thread = (await t.call("POST", "/threads", { token: ada, json: {} })).body;
      const statuses: number[] = [];
      for (let i = 0; i < 100; i++) {
        statuses.push((await t.call("PATCH", `/threads/${thread.thread_id}`, { token: ada, json: { metadata: keys(`q${i}_`, 1) } })).status);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(MAX_METADATA_KEYS);
      expect(statuses.slice(MAX_METADATA_KEYS).every((s) => s === 400)).toBe(true);
      const doc = await stored(thread.thread_id);
      expect(Object.keys(doc?.metadata ?? {})).toHaveLength(MAX_METADATA_KEYS);
      // 32 keys of at most 100 characters with values of at most 1,000: the thread stays small.
      expect(JSON.stringify(doc?.metadata).length).toBeLessThan(40_000);
    });
  });

  describe("POST /threads with a thread_id another principal holds", () => {
    it("returns to globex's user the same 409 as to the thread's owner, and nothing of the thread", async () => {
      const threadId = crypto.randomUUID();
      expect((await t.call("POST", "/threads", { token: ada, json: { thread_id: threadId, metadata: { secret: "acme-plan" } } })).status).toBe(200);
      const before = await stored(threadId);
      const owner = await t.call("POST", "/threads", { token: ada, json: { thread_id: threadId } });
      const attempts = [
        await t.call("POST", "/threads", { token: gil, json: { thread_id: threadId } }),
        await t.call("POST", "/threads", { token: gil, json: { thread_id: threadId, if_exists: "do_nothing" } }),
        await t.call("POST", "/threads", { token: gil, json: { thread_id: threadId, if_exists: "raise", metadata: { owner: "gil" } } }),
      ];
      for (const attempt of attempts) {
        expect(attempt.status).toBe(409);
        expect(attempt.body).toEqual(owner.body);
        expect(JSON.stringify(attempt.body)).not.toMatch(/acme|ada|secret|exists/);
      }
      expect(await stored(threadId)).toEqual(before);
      expect((await t.call("GET", `/threads/${threadId}`, { token: gil })).status).toBe(404);
    });
  });
});
