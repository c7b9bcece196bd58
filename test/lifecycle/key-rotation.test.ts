import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpHandler } from "../../lib/api/http-handler.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { fieldValue, isCiphertext } from "../../lib/crypto/content-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { KEY_ROTATION_SCHEDULE_ACTOR } from "../../lib/lifecycle/key-rotation.js";
import { apiTurnJob } from "../../lib/queue/turn-dispatcher.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { ENCRYPTED_FIELDS } from "../../lib/store/database.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { callRoute } from "../support/route-call.js";
import { useTestDatabase } from "../support/store-fixture.js";

const ADMIN = "ops:admin";
const OPERATOR = "ops:operator";
const MARKER = "OKAPI-5521-SECRET";
const alice: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
const eve: Caller = { principal: apiPrincipal("eve", "globex"), roles: [] };
const acme = { issuer: "api" as const, tenant: "acme" };
const DAY_MS = 86_400_000;

const database = useTestDatabase("key_rotation", { clearBeforeEach: false });
let keysDir: string;
let keys: LocalTenantKeys;
let app: App;
let route: ReturnType<typeof createHttpHandler>;

const tools: ToolDefinition[] = [
  {
    name: "look_up",
    description: "Reads a report.",
    schema: z.object({ key: z.string() }),
    sideEffects: false,
    // Long enough to be offloaded to `artifacts`.
    run: async ({ key }: { key: string }) => `report on ${key}: ${`${MARKER} row; `.repeat(1_500)}`,
  },
];

async function ask(conversationId: string, content: string, caller = alice) {
  const turnId = randomUUID();
  const plain = { conversationId, caller, content, turnId };
  return app.runner.run({ ...plain, origin: apiTurnJob(plain) });
}

async function call(method: string, path: string, as: { tenant?: string; roles?: string[] }, body?: unknown) {
  const headers: Record<string, string> = { "x-user": "root", "x-roles": (as.roles ?? []).join(",") };
  if (as.tenant) headers["x-tenant"] = as.tenant;
  return callRoute(route, method, path, { headers, body });
}

const CHECKPOINT_COLLECTIONS = [COLLECTIONS.checkpoints, COLLECTIONS.checkpointWrites, COLLECTIONS.checkpointBlobs];

/** Every ciphertext anywhere in a document, with where it is. */
function ciphertextsIn(value: unknown, where: string): { where: string; bytes: Buffer }[] {
  if (isCiphertext(value)) return [{ where, bytes: Buffer.from(value.value()) }];
  if (value === null || typeof value !== "object" || value instanceof Date) return [];
  return Object.entries(value).flatMap(([key, v]) => ciphertextsIn(v, `${where}.${key}`));
}

/** The documents of the conversations in one collection: by `_id`, `thread_id` (the checkpointer's) or `conversationId`. */
function documentsOf(name: string, conversationIds: string[]): Promise<Document[]> {
  const by = name === COLLECTIONS.conversations ? "_id" : (CHECKPOINT_COLLECTIONS as string[]).includes(name) ? "thread_id" : "conversationId";
  return database.db
    .collection<Document>(name)
    .find({ [by]: { $in: conversationIds } } as Document)
    .sort({ _id: 1 })
    .toArray();
}

/** Every sealed value of the conversations' documents, in the encrypted collections and the checkpointer's, as the raw driver reads them. */
async function sealedValues(conversationIds: string[]): Promise<{ where: string; bytes: Buffer }[]> {
  const out: { where: string; bytes: Buffer }[] = [];
  for (const [name, fields] of Object.entries(ENCRYPTED_FIELDS)) {
    for (const doc of await documentsOf(name, conversationIds)) {
      for (const field of Object.keys(fields)) out.push(...ciphertextsIn(fieldValue(doc, field), `${name}.${field} of ${doc._id}`));
    }
  }
  for (const name of CHECKPOINT_COLLECTIONS) {
    for (const doc of await documentsOf(name, conversationIds)) out.push(...ciphertextsIn(doc, `${name} ${String(doc._id)}`));
  }
  return out;
}

beforeAll(async () => {
  keysDir = await mkdtemp(join(tmpdir(), "threadwise-rotation-"));
  keys = new LocalTenantKeys(keysDir);
  const config = loadConfig({
    MONGODB_URI: "mongodb://unused",
    MONGODB_DB: database.dbName,
    VIEW_FINISHED_TURNS: "1",
    VIEW_HISTORY_BLOCK_TURNS: "1",
    LIMITS_ADMIN_ROLE: ADMIN,
    OPERATOR_ROLE: OPERATOR,
    CONTENT_KEY_ROTATION_DAYS: "30",
  });
  app = await createApp(config, { mongoClient: database.client, tools, contentKeys: keys });
  // `x-tenant` and `x-roles` stand for what a verified token says.
  route = createHttpHandler(app, config, {
    authenticate: async (request) => ({
      principal: apiPrincipal(request.headers["x-user"] ?? "x", request.headers["x-tenant"] ?? null),
      roles: (request.headers["x-roles"] ?? "").split(",").filter(Boolean),
    }),
  });
}, 60_000);
afterAll(() => app?.close());

describe("KeyRotation", () => {
  describe("rotate", () => {
    it("rotates mid-conversation through the admin API; re-encryption leaves every sealed value of the tenant under the new key, reads work", async () => {
      const { _id: ours } = await app.database.conversations.create(alice.principal);
      const { _id: theirs } = await app.database.conversations.create(eve.principal);
      await ask(ours, `hello, remember ${MARKER}`);
      await ask(ours, `look_up {"key": "${MARKER}"}`);
      for (let i = 0; i < 8; i++) await ask(ours, `turn ${i} about ${MARKER}`);
      await ask(theirs, "globex's own question", eve);
      const theirsBefore = await Promise.all([...Object.keys(ENCRYPTED_FIELDS), ...CHECKPOINT_COLLECTIONS].map((name) => documentsOf(name, [theirs])));

      const rotated = await call("POST", "/v1/admin/content-keys/rotate", { tenant: "acme", roles: [ADMIN] }, acme);
      expect(rotated.status).toBe(200);
      const { keyId, rotatedAt, effectiveAt } = rotated.body;
      // When it takes effect everywhere: the rotation plus the data keys' age (CONTENT_DATA_KEY_MAX_AGE_SECONDS, 300 s).
      expect(Date.parse(effectiveAt) - Date.parse(rotatedAt)).toBe(300_000);
      expect(rotated.body.reencryption).toMatchObject({ status: "pending", keyId, position: null });
      const [record] = (await app.audit.list(acme, { limit: 10 })).filter((r) => r.action === "key.rotate");
      expect(record).toMatchObject({ actor: { issuer: "api", tenant: "acme", subject: "root" }, resource: { keyId }, channel: "api" });
      expect(JSON.stringify(record)).not.toMatch(/"key":/);

      // The conversation goes on under the new key.
      const after = await ask(ours, `after the rotation, ${MARKER}`);
      expect(after.status).toBe("completed");
      const older = (await sealedValues([ours])).filter((v) => !v.bytes.includes(Buffer.from(keyId)));
      expect(older.length).toBeGreaterThan(10);

      // Not before every process seals under the new key.
      expect(await app.keyRotation.reencrypt(acme)).toMatchObject({ status: "waiting", startsAt: new Date(effectiveAt) });
      const later = () => new Date(Date.parse(effectiveAt) + 1_000);
      const outcome = await app.keyRotation.reencrypt(acme, { now: later });
      expect(outcome.status).toBe("done");

      // Read raw: every sealed value of the tenant names the new key in its header…
      const values = await sealedValues([ours]);
      expect(values.length).toBeGreaterThan(10);
      // The checkpoints' values among them (the checkpoints walker).
      expect(values.filter((v) => CHECKPOINT_COLLECTIONS.some((name) => v.where.startsWith(`${name} `))).length).toBeGreaterThan(10);
      expect(values.filter((v) => !v.bytes.includes(Buffer.from(keyId))).map((v) => v.where)).toEqual([]);
      const termKey = await database.db.collection<Document>(COLLECTIONS.termKeys).findOne({ _id: JSON.stringify(["api", "acme"]) } as Document);
      expect(Buffer.from(termKey?.key.value()).includes(Buffer.from(keyId))).toBe(true);
      // …every read still works…
      const messages = await app.database.messages.list(ours);
      expect(messages[0].content).toBe(`hello, remember ${MARKER}`);
      expect(messages.map((m) => m.content)).toContain(`after the rotation, ${MARKER}`);
      const turns = await app.database.turns.list(ours, { limit: 50 });
      expect(turns.some((t) => t.answer?.includes(MARKER))).toBe(true);
      expect(JSON.stringify(await app.database.turns.listCalls(turns.at(-1)?._id ?? ""))).toContain(MARKER);
      expect(JSON.stringify(await app.database.archive.read(ours, 1, 3))).toContain(MARKER);
      expect(await app.database.recall.queryTerms(ours, ["okapi"])).toHaveLength(1);
      // …and another tenant's documents are as they were, byte for byte.
      const theirsAfter = await Promise.all([...Object.keys(ENCRYPTED_FIELDS), ...CHECKPOINT_COLLECTIONS].map((name) => documentsOf(name, [theirs])));
      expect(theirsAfter).toEqual(theirsBefore);

      // The status route shows the finished pass; a second run finds nothing to do.
      const status = await call("GET", "/v1/admin/content-keys?issuer=api&tenant=acme", { tenant: "acme", roles: [ADMIN] });
      expect(status.body.reencryption).toMatchObject({ status: "done", keyId, position: { walker: "term_keys" } });
      expect(status.body.reencryption.counts.resealed).toBe(older.length + 1);
      expect(await app.keyRotation.reencrypt(acme, { now: later })).toEqual({ status: "none" });
    }, 120_000);

    it("refuses another tenant's admin with 403, and nothing rotates, is scheduled or recorded", async () => {
      const before = await keys.currentKeys();
      const jobs = await app.database.reseals.jobs.countDocuments({});
      const records = (await app.audit.list(acme, { limit: 100 })).length;
      const refused = await call("POST", "/v1/admin/content-keys/rotate", { tenant: "globex", roles: [ADMIN] }, acme);
      expect(refused.status).toBe(403);
      expect(refused.body.error.message).toContain("api/globex");
      expect((await call("GET", "/v1/admin/content-keys?issuer=api&tenant=acme", { tenant: "globex", roles: [ADMIN] })).status).toBe(403);
      // A colleague without the role, on its own tenant.
      expect((await call("POST", "/v1/admin/content-keys/rotate", { tenant: "acme" }, acme)).status).toBe(403);
      expect(await keys.currentKeys()).toEqual(before);
      expect(await app.database.reseals.jobs.countDocuments({})).toBe(jobs);
      expect((await app.audit.list(acme, { limit: 100 })).length).toBe(records);
    });
  });

  describe("maintain", () => {
    it("rotates each tenant whose key is CONTENT_KEY_ROTATION_DAYS old, records it as the schedule's, and leaves newer keys", async () => {
      const initech = { issuer: "api" as const, tenant: "initech" };
      // Initech's current key made 31 days ago; globex's is from this test file's run.
      await keys.rotate(initech, new Date(Date.now() - 31 * DAY_MS));
      const globexKey = (await keys.currentKeys()).find((k) => k.tenant.tenant === "globex")?.keyId;
      const result = await app.keyRotation.maintain();
      expect(result.rotated.map((r) => r.tenant)).toEqual([initech]);
      const current = await keys.currentKeys();
      expect(current.find((k) => k.tenant.tenant === "initech")?.keyId).toBe(result.rotated[0].keyId);
      expect(current.find((k) => k.tenant.tenant === "globex")?.keyId).toBe(globexKey);
      const [record] = (await app.audit.list(initech, { limit: 10 })).filter((r) => r.action === "key.rotate");
      expect(record).toMatchObject({ actor: KEY_ROTATION_SCHEDULE_ACTOR, channel: "schedule", resource: { keyId: result.rotated[0].keyId } });
      // Its re-encryption waits for the new key to reach every process; a second run rotates nothing more.
      expect(result.reencrypted).toEqual([]);
      expect((await app.keyRotation.maintain()).rotated).toEqual([]);
    });
  });
});
