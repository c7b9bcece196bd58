import { randomUUID } from "node:crypto";
import { KMS } from "@aws-sdk/client-kms";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { FieldCipher, type FieldCipherOptions } from "../../lib/crypto/field-cipher.js";
import { type ContentKeyDocument, KmsTenantKeys } from "../../lib/crypto/kms-tenant-keys.js";
import { CONTENT_KEYS_COLLECTION, type TenantRef } from "../../lib/crypto/tenant-keys.js";
import { apiTurnJob } from "../../lib/queue/turn-dispatcher.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { type KmsKeysEndpoint, startKmsKeysEndpoint } from "../support/kms-keys-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";

/**
 * The data-key cache on the hot path (issue 44, "Costs measured"): turns of a tenant go through
 * `createApp` with `KmsTenantKeys` over the real `@aws-sdk/client-kms` against the KMS stand-in,
 * which records every request. Once a tenant's first turn has made its data keys, its turns and
 * their reads ask KMS nothing until the keys' age, values or bytes run out.
 */
const database = useTestDatabase("field_cipher_data_keys");

let kms: KmsKeysEndpoint;
let client: KMS;
beforeAll(async () => {
  kms = await startKmsKeysEndpoint();
  client = new KMS({ endpoint: kms.url, region: "us-east-1", credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" } });
});
afterAll(() => kms.close());

const lookUp: ToolDefinition = {
  name: "look_up",
  description: "Reads a report.",
  schema: z.object({ key: z.string() }),
  sideEffects: false,
  // Long enough to be offloaded to `artifacts`.
  run: async ({ key }: { key: string }) => `report on ${key}: ${"north, 1200, steady; ".repeat(800)}`,
};

const keysOf = () => new KmsTenantKeys(client, database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION));

async function appOver(env: Record<string, string> = {}): Promise<App> {
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, VIEW_FINISHED_TURNS: "1", VIEW_HISTORY_BLOCK_TURNS: "1", ...env });
  return createApp(config, { mongoClient: database.client, tools: [lookUp], contentKeys: keysOf() });
}

async function ask(app: App, conversationId: string, caller: Caller, content: string): Promise<void> {
  const plain = { conversationId, caller, content, turnId: randomUUID() };
  const result = await app.runner.run({ ...plain, origin: apiTurnJob(plain) });
  expect(result.status).toBe("completed");
}

/** What a client reads of a conversation: its messages, its turns with their model calls, and an offloaded output. */
async function readBack(app: App, conversationId: string): Promise<void> {
  const messages = await app.database.messages.list(conversationId);
  expect(messages.length).toBeGreaterThan(0);
  for (const turn of await app.database.turns.list(conversationId, { limit: 50 })) await app.database.turns.getWithCalls(turn._id);
}

/** The KMS requests made while `work` runs. */
async function kmsCallsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const start = kms.calls.length;
  await work();
  return kms.calls.slice(start);
}

const dataKeyCalls = (calls: readonly string[]) => calls.filter((c) => c.startsWith("GenerateDataKey") || c.startsWith("Decrypt"));

describe("FieldCipher data keys, on a tenant's turns", () => {
  it("makes no KMS request after the tenant's first turn: more turns, another of its conversations, and reading them back", async () => {
    const app = await appOver();
    try {
      const alice: Caller = { principal: apiPrincipal("alice", "hot-path"), roles: [] };
      const bob: Caller = { principal: apiPrincipal("bob", "hot-path"), roles: [] };
      const { _id: first } = await app.database.conversations.create(alice.principal);
      const warming = await kmsCallsDuring(() => ask(app, first, alice, 'look_up {"key": "north"}'));
      // The first turn makes the tenant's key and its data keys (one per collection written), and reads back what it wrote.
      expect(warming).toContain(`CreateKey`);
      expect(warming.some((c) => c.startsWith("GenerateDataKey"))).toBe(true);

      const hot = await kmsCallsDuring(async () => {
        for (let i = 0; i < 6; i++) await ask(app, first, alice, i % 2 === 0 ? `question ${i}: how did the quarter go?` : `look_up {"key": "region ${i}"}`);
        const { _id: second } = await app.database.conversations.create(bob.principal);
        await ask(app, second, bob, 'look_up {"key": "south"}');
        await ask(app, second, bob, "and the week before?");
        await readBack(app, first);
        await readBack(app, second);
      });
      expect(hot).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("asks KMS for new data keys once their age passes CONTENT_DATA_KEY_MAX_AGE_SECONDS", async () => {
    // The clock (Date only; timers run) moves when the test moves it, so a slow machine does not age the keys early.
    vi.useFakeTimers({ toFake: ["Date"], now: new Date("2026-12-08T09:00:00Z") });
    const app = await appOver({ CONTENT_DATA_KEY_MAX_AGE_SECONDS: "60" });
    try {
      const carol: Caller = { principal: apiPrincipal("carol", "max-age"), roles: [] };
      const { _id } = await app.database.conversations.create(carol.principal);
      await ask(app, _id, carol, 'look_up {"key": "north"}');
      vi.setSystemTime(new Date("2026-12-08T09:00:59Z"));
      expect(await kmsCallsDuring(() => ask(app, _id, carol, 'look_up {"key": "east"}'))).toEqual([]);
      vi.setSystemTime(new Date("2026-12-08T09:01:01Z"));
      const aged = await kmsCallsDuring(() => ask(app, _id, carol, 'look_up {"key": "west"}'));
      const [key] = (await database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION).findOne({ _id: '["api","max-age"]' }))?.keys ?? [];
      expect(aged).toContain(`GenerateDataKey ${key.arn}`);
      // A new data key, under the same tenant key: no key was made.
      expect(aged.filter((c) => c.startsWith("CreateKey"))).toEqual([]);
    } finally {
      vi.useRealTimers();
      await app.close();
    }
  });
});

describe("FieldCipher data keys, bounds", () => {
  const ref = (i: number) => ({ collection: "messages", id: `t${i}:user`, field: "content" });
  const cipherOf = (tenant: TenantRef, options: Partial<FieldCipherOptions>) => new FieldCipher({ keys: keysOf(), tenantOf: async () => tenant, ...options });

  it("makes a new data key after maxMessages values", async () => {
    const cipher = cipherOf({ issuer: "api", tenant: "max-messages" }, { maxMessages: 3 });
    const calls = await kmsCallsDuring(async () => {
      for (let i = 0; i < 9; i++) await cipher.sealText("c", ref(i), `question ${i}`);
    });
    // Values 1–3 under the first key, 4–6 under the second, 7–9 under the third.
    expect(dataKeyCalls(calls).filter((c) => c.startsWith("GenerateDataKey"))).toHaveLength(3);
  });

  it("makes a new data key once maxBytes are encrypted under one", async () => {
    const cipher = cipherOf({ issuer: "api", tenant: "max-bytes" }, { maxBytes: 2_000 });
    const calls = await kmsCallsDuring(async () => {
      for (let i = 0; i < 8; i++) await cipher.sealText("c", ref(i), "x".repeat(600));
    });
    // About 600 bytes a value (the text and its binding): three values to a key of 2,000 bytes, so three keys for eight.
    expect(dataKeyCalls(calls).filter((c) => c.startsWith("GenerateDataKey"))).toHaveLength(3);
  });

  it("keeps at most cacheEntries data keys: a tenant's key pushed out by others' is asked for again", async () => {
    const tenants = ["lru-a", "lru-b", "lru-c"].map((tenant): TenantRef => ({ issuer: "api", tenant }));
    const owners = new Map(tenants.map((t, i) => [`c${i}`, t]));
    const cipher = new FieldCipher({ keys: keysOf(), tenantOf: async (id) => owners.get(id) as TenantRef, cacheEntries: 2 });
    await cipher.sealText("c0", ref(0), "a's first");
    expect(dataKeyCalls(await kmsCallsDuring(() => cipher.sealText("c0", ref(1), "a's second")))).toEqual([]);
    await cipher.sealText("c1", ref(0), "b's");
    await cipher.sealText("c2", ref(0), "c's");
    const again = await kmsCallsDuring(() => cipher.sealText("c0", ref(2), "a's third"));
    expect(again.filter((c) => c.startsWith("GenerateDataKey"))).toHaveLength(1);
  });
});
