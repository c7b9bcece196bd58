import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { Binary, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp, type App } from "../../lib/app.js";
import { IdempotentRequests } from "../../lib/api/idempotent-requests.js";
import { apiPrincipal, ownerKey, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { AuditLog } from "../../lib/audit/audit-log.js";
import { Eraser, verifyReceipt } from "../../lib/lifecycle/eraser.js";
import { isCiphertext } from "../../lib/crypto/content-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { ContentRefusedError } from "../../lib/errors.js";
import { apiTurnJob } from "../../lib/queue/turn-dispatcher.js";
import { ConversationSearch } from "../../lib/recall/conversation-search.js";
import { recallTerms } from "../../lib/recall/recall-terms.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { ENCRYPTED_COLLECTIONS, ThreadwiseDatabase } from "../../lib/store/database.js";
import { CLEAR_METADATA_KEYS } from "../../lib/store/threadwise-saver.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { ToolIdempotencyGuard } from "../../lib/tools/tool-idempotency-guard.js";
import { testDatabase, type TestDatabase } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";

/** What the user and the tools say: it must appear in no encrypted collection. */
const MARKER = "ZEBRA-7731-CONFIDENTIAL";
const alice: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
const operator = { issuer: "cli", tenant: null, subject: "ops" };
const eve: Caller = { principal: apiPrincipal("eve", "globex"), roles: [] };

const database = useTestDatabase("contents_at_rest", { clearBeforeEach: false });
let keysDir: string;
let app: App;

function tools(): ToolDefinition[] {
  return [
    {
      name: "look_up",
      description: "Reads a report.",
      schema: z.object({ key: z.string() }),
      sideEffects: false,
      // Long enough to be offloaded to `artifacts`.
      run: async ({ key }: { key: string }) => `report on ${key}: ${`${MARKER} row; `.repeat(1_500)}`,
    },
    {
      name: "record_effect",
      description: "Records an effect.",
      schema: z.object({ note: z.string().min(1) }),
      sideEffects: true,
      run: async ({ note }: { note: string }) => `recorded ${note}`,
    },
  ];
}

async function appOver(db: TestDatabase = database, encrypted = true): Promise<App> {
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: db.dbName, VIEW_FINISHED_TURNS: "1", VIEW_HISTORY_BLOCK_TURNS: "1" });
  config.tools.approvals = { tools: { record_effect: { require: "always" } }, ttlSeconds: 600 };
  return createApp(config, { mongoClient: db.client, tools: tools(), ...(encrypted && { contentKeys: new LocalTenantKeys(keysDir) }) });
}

async function ask(conversationId: string, content: string, caller = alice, on = app) {
  const turnId = randomUUID();
  const plain = { conversationId, caller, content, turnId };
  return on.runner.run({ ...plain, origin: apiTurnJob(plain) });
}

/** Every document of the encrypted collections, as the raw driver reads them. */
async function rawDocuments(db = database.db): Promise<Record<string, Document[]>> {
  const entries = await Promise.all(ENCRYPTED_COLLECTIONS.map(async (name) => [name, await db.collection(name).find({}).toArray()] as const));
  return Object.fromEntries(entries);
}

/** Documents as text, binary fields (serialized checkpoints, ciphertexts) as their bytes: what a reader of a backup sees. */
function rawText(value: unknown): string {
  if (value instanceof Binary) return Buffer.from(value.value()).toString("latin1");
  if (value instanceof Date || value === null || typeof value !== "object") return JSON.stringify(value) ?? "";
  return Object.values(value).map(rawText).join(" ");
}

/**
 * What stays clear, and why (docs/security.md, "What is not encrypted"): approvals' arguments, decisions and
 * origin (the job that resumes the turn), which the Slack and Teams webhooks (no Encryption SDK) show in edit
 * forms, check edits against and enqueue.
 */
const NOT_ENCRYPTED: Partial<Record<string, readonly string[] | "all">> = {};

/**
 * The paths of binary values that are not ciphertexts (subtype 0x80): serialized values stored clear. A
 * header of the saver's format keeps its versions clear (`checkpoint`: no values, checked for the marker).
 */
function clearBinaries(value: unknown, path = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => clearBinaries(v, `${path}.${i}`));
  if (value !== null && typeof value === "object" && (value as Document).format === 2)
    return clearBinaries({ ...value, checkpoint: undefined, format: undefined }, path);
  if (value instanceof Binary) return value.sub_type === 0x80 ? [] : [path];
  if (value === null || typeof value !== "object" || value instanceof Date) return [];
  return Object.entries(value).flatMap(([key, v]) => clearBinaries(v, `${path}.${key}`));
}

function withoutFields(doc: Document, fields: readonly string[]): Document {
  return Object.fromEntries(Object.entries(doc).filter(([key]) => !fields.includes(key)));
}

let conversationId: string;

/** Every checkpoint of the thread as the saver reads it back, in every namespace. */
async function checkpointsOf(db: ThreadwiseDatabase, threadId: string): Promise<string> {
  const tuples = [];
  for await (const tuple of db.checkpointer.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
  return JSON.stringify(tuples);
}

const requestsOf = (on: App) => new IdempotentRequests({ collection: on.database.idempotency, cipher: on.database.cipher });
const scopeOf = (caller: Caller, id: string) => [ownerKey(caller.principal), id];

beforeAll(async () => {
  keysDir = await mkdtemp(join(tmpdir(), "threadwise-contents-"));
  app = await appOver();
  ({ _id: conversationId } = await app.database.conversations.create(alice.principal));
  await ask(conversationId, `hello, remember ${MARKER}`);
  await ask(conversationId, `look_up {"key": "${MARKER}"}`);
  const paused = await ask(conversationId, `record_effect {"note": "${MARKER} shipped"}`);
  expect(paused.status).toBe("awaiting_approval");
  await app.approvals.decide(conversationId, paused.approvals?.[0]?.approvalId ?? "", alice, { kind: "approve" });
  // A call edited, and one rejected with a reason: the decisions' contents are sealed too.
  const edited = await ask(conversationId, `record_effect {"note": "${MARKER} draft"}`);
  await app.approvals.decide(conversationId, edited.approvals?.[0]?.approvalId ?? "", alice, { kind: "edit", args: { note: `${MARKER} final` } });
  const rejected = await ask(conversationId, `record_effect {"note": "${MARKER} never"}`);
  await app.approvals.decide(conversationId, rejected.approvals?.[0]?.approvalId ?? "", alice, { kind: "reject", reason: `${MARKER} is wrong` });
  // A request with an Idempotency-Key, as the API runs it: its record keeps the answer and the question's hash.
  await requestsOf(app).run(scopeOf(alice, conversationId), "k-first", `${MARKER} question`, async () => ({ answer: `${MARKER} answer` }), {
    conversationId,
    owner: alice.principal,
  });
  // Enough turns past the window for the working set to archive some.
  for (let i = 0; i < 8; i++) await ask(conversationId, `turn ${i} about ${MARKER}`);
}, 240_000);

afterAll(() => app?.close());

describe("contents at rest", () => {
  it("leaves no content in clear in any encrypted collection, read with the raw driver", async () => {
    const raw = await rawDocuments();
    for (const name of [COLLECTIONS.messages, COLLECTIONS.turns, COLLECTIONS.modelCalls, COLLECTIONS.turnArchive, COLLECTIONS.artifacts]) {
      expect(raw[name].length, name).toBeGreaterThan(0);
    }
    // Every collection, not only those listed as encrypted: what is left clear is named, with its reason, in NOT_ENCRYPTED.
    for (const name of new Set(Object.values(COLLECTIONS))) {
      const left = NOT_ENCRYPTED[name];
      if (left === "all") continue;
      const docs = (await database.db.collection(name).find({}).toArray()).map((doc) => withoutFields(doc, left ?? []));
      // Lower case too: the recall index's terms are words in lower case, stemmed (`zebra`, `7731`) unless keyed.
      expect(rawText(docs).toLowerCase(), name).not.toContain("zebra");
    }
    // …while the product reads every one of them back.
    const messages = await app.database.messages.list(conversationId);
    expect(messages.filter((m) => m.content.includes(MARKER)).length).toBeGreaterThan(8);
    const turns = await app.database.turns.list(conversationId, { limit: 50 });
    expect(turns.some((t) => t.answer?.includes(MARKER))).toBe(true);
    expect(JSON.stringify(await app.database.turns.listCalls(turns[0]._id))).toContain(MARKER);
    expect(JSON.stringify(await app.database.archive.read(conversationId, 1, 3))).toContain(MARKER);
  });

  it("finds turns by their words through keyed terms, with the same hit as a search over words", async () => {
    const search = new ConversationSearch({ index: app.database.recall });
    const outcome = await search.search({ conversationId, query: "quarterly shipped zebra", limit: 3 });
    expect(outcome.hits.length).toBeGreaterThan(0);
    expect(JSON.stringify(outcome.hits[0])).toContain("shipped");
    // The index itself holds hashes: the word is not a term of any entry, its keyed hash is.
    const entries = await app.database.recall.entries(conversationId);
    const [word] = recallTerms("shipped");
    const [hashed] = await app.database.recall.queryTerms(conversationId, [word]);
    expect(entries.some((e) => e.terms.has(word))).toBe(false);
    expect(entries.some((e) => e.terms.has(hashed))).toBe(true);
  });

  it("refuses a ciphertext moved to another message of the conversation", async () => {
    const messages = database.db.collection<Document & { _id: string }>(COLLECTIONS.messages);
    const source = await messages.findOne({ conversationId, role: "user" });
    const moved = { ...source, _id: `${randomUUID()}:user`, turnId: "moved" };
    await messages.insertOne(moved);
    const error = await app.database.messages.list(conversationId).catch((e: unknown) => e);
    await messages.deleteOne({ _id: moved._id });
    expect(error).toBeInstanceOf(ContentRefusedError);
    expect((error as ContentRefusedError).reason).toBe("moved");
  });

  it("refuses a ciphertext moved into another tenant's conversation", async () => {
    const { _id: theirs } = await app.database.conversations.create(eve.principal);
    const messages = database.db.collection<Document & { _id: string }>(COLLECTIONS.messages);
    const source = await messages.findOne({ conversationId, role: "user" });
    // The same row in the other tenant's conversation: their keys cannot open it.
    await messages.insertOne({ ...source, _id: `${randomUUID()}:user`, conversationId: theirs });
    const error = await app.database.messages.list(theirs).catch((e: unknown) => e);
    await database.db.collection(COLLECTIONS.messages).deleteOne({ conversationId: theirs });
    expect(error).toBeInstanceOf(ContentRefusedError);
    expect((error as ContentRefusedError).reason).toBe("undecryptable");
  });

  describe("checkpoints", () => {
    const CHECKPOINT_COLLECTIONS = [COLLECTIONS.checkpoints, COLLECTIONS.checkpointWrites, COLLECTIONS.checkpointBlobs] as const;
    type Link = Document & { _id: unknown; items: Binary[] };
    const blobs = () => database.db.collection<Link>(COLLECTIONS.checkpointBlobs);
    /** The first link of a thread's message list: the one holding its first message. */
    const firstLinks = (threadId: string) =>
      blobs()
        .find({ thread_id: threadId, channel: "messages", type: "list", base: { $exists: false }, count: { $gt: 0 } })
        .toArray();
    const tupleOf = (threadId: string) => app.database.checkpointer.getTuple({ configurable: { thread_id: threadId } });

    /** Puts `item` as the first message of every first link of the thread, reads the thread, and puts the links back. */
    async function readWithFirstItem(threadId: string, item: Binary): Promise<unknown> {
      const links = await firstLinks(threadId);
      expect(links.length).toBeGreaterThan(0);
      try {
        for (const link of links) await blobs().updateOne({ _id: link._id }, { $set: { items: [item, ...link.items.slice(1)] } });
        return await tupleOf(threadId).catch((e: unknown) => e);
      } finally {
        for (const link of links) await blobs().updateOne({ _id: link._id }, { $set: { items: link.items } });
      }
    }

    async function ownThread(caller: Caller): Promise<string> {
      const { _id } = await app.database.conversations.create(caller.principal);
      await ask(_id, `a question of ${caller.principal.subject}`, caller);
      return _id;
    }

    it("stores every checkpoint value as a ciphertext: no marker, no clear serialized value, metadata_search without content", async () => {
      for (const name of CHECKPOINT_COLLECTIONS) {
        const docs = await database.db.collection(name).find({ thread_id: conversationId }).toArray();
        expect(docs.length, name).toBeGreaterThan(0);
        expect(rawText(docs).toLowerCase(), name).not.toContain("zebra");
        expect(clearBinaries(docs), name).toEqual([]);
      }
      for (const doc of await database.db.collection(COLLECTIONS.checkpoints).find({ thread_id: conversationId }).toArray()) {
        expect(Object.keys(doc.metadata_search).every((key) => (CLEAR_METADATA_KEYS as readonly string[]).includes(key))).toBe(true);
      }
      // …while the thread reads back whole.
      const tuple = await tupleOf(conversationId);
      expect(JSON.stringify(tuple?.checkpoint.channel_values)).toContain(MARKER);
    });

    it("refuses a message of a thread moved into another thread of the same tenant", async () => {
      const [source] = await firstLinks(conversationId);
      const error = await readWithFirstItem(await ownThread(alice), source.items[0]);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("moved");
      expect((error as ContentRefusedError).collection).toBe(COLLECTIONS.checkpointBlobs);
    });

    it("refuses a message of a thread moved into another tenant's thread", async () => {
      const [source] = await firstLinks(conversationId);
      const error = await readWithFirstItem(await ownThread(eve), source.items[0]);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("undecryptable");
    });

    it("refuses a clear message put where a ciphertext is expected", async () => {
      const [, bytes] = await new JsonPlusSerializer().dumpsTyped(new HumanMessage({ content: "planted", id: "planted" }));
      const error = await readWithFirstItem(await ownThread(alice), new Binary(bytes));
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("plaintext");
    });

    it("refuses a pending write moved into another thread's checkpoint", async () => {
      const theirs = await ownThread(alice);
      const writes = database.db.collection(COLLECTIONS.checkpointWrites);
      const source = await writes.findOne({ thread_id: conversationId });
      const head = await tupleOf(theirs);
      // Unfenced, so that the thread's readers see it.
      const { _id, epoch, token, ...moved } = (source ?? {}) as Document;
      const checkpoint_id = head?.config.configurable?.checkpoint_id;
      await writes.insertOne({ ...moved, thread_id: theirs, checkpoint_id, task_id: "moved" });
      const error = await tupleOf(theirs).catch((e: unknown) => e);
      await writes.deleteOne({ thread_id: theirs, task_id: "moved" });
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("moved");
      expect((error as ContentRefusedError).collection).toBe(COLLECTIONS.checkpointWrites);
    });
  });

  describe("provenance", () => {
    const calls = () => database.db.collection<Document & { _id: string }>(COLLECTIONS.modelCalls);

    it("seals what a view drew on and an artifact's provenance (tools, roles, users) beside them, and reads them back", async () => {
      const sealedCalls = await calls()
        .find({ conversationId, sources: { $exists: true } })
        .toArray();
      const heads = await database.db.collection(COLLECTIONS.artifacts).find({ conversationId, kind: "artifact" }).toArray();
      expect(sealedCalls.length).toBeGreaterThan(0);
      expect(heads.length).toBeGreaterThan(0);
      expect([...sealedCalls.map((c) => c.sources), ...heads.map((h) => h.provenance)].every(isCiphertext)).toBe(true);
      const turn = String(heads[0].turnId);
      const recorded = await app.database.turns.listCalls(turn);
      expect(recorded.flatMap((c) => c.sources ?? []).map((s) => s.tool)).toContain("look_up");
      const artifact = await app.database.artifacts.get(String(heads[0]._id), { conversationId, reader: alice.principal });
      expect(artifact?.provenance?.map((s) => s.tool)).toEqual(["look_up"]);
    });

    it("refuses a view's sources moved to another call of the turn", async () => {
      const [first, second] = await calls()
        .find({ conversationId, sources: { $exists: true } })
        .sort({ _id: 1 })
        .limit(2)
        .toArray();
      await calls().updateOne({ _id: second._id }, { $set: { sources: first.sources } });
      const error = await app.database.turns.listCalls(String(second.turnId)).catch((e: unknown) => e);
      await calls().updateOne({ _id: second._id }, { $set: { sources: second.sources } });
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("moved");
    });
  });

  describe("idempotency records", () => {
    const records = () => database.db.collection<Document & { _id: string }>(COLLECTIONS.idempotency);
    /** A record of alice's, answered once: its sealed answer is what the attacker moves. */
    async function answered(key: string, caller = alice, id = conversationId) {
      const before = new Set(
        (
          await records()
            .find({}, { projection: { _id: 1 } })
            .toArray()
        ).map((d) => d._id),
      );
      await requestsOf(app).run(scopeOf(caller, id), key, "question", async () => ({ answer: `${MARKER} ${key}` }), {
        conversationId: id,
        owner: caller.principal,
      });
      const doc = (await records().find({ conversationId: id }).toArray()).find((d) => !before.has(d._id));
      return doc as Document & { _id: string };
    }
    const repeat = (key: string, caller = alice, id = conversationId) =>
      requestsOf(app)
        .run(scopeOf(caller, id), key, "question", async () => "ran twice", { conversationId: id, owner: caller.principal })
        .catch((e: unknown) => e);

    it("seals the stored answer and the payload's hash, and a repeat answers with the first response", async () => {
      const doc = await answered("k-sealed");
      expect(isCiphertext(doc.data)).toBe(true);
      // A clear hash of a short question would confirm a guess of it.
      expect(isCiphertext(doc.validation)).toBe(true);
      expect(await repeat("k-sealed")).toEqual({ answer: `${MARKER} k-sealed` });
    });

    it("refuses a sealed answer moved to another record of the conversation", async () => {
      const source = await answered("k-source");
      const target = await answered("k-target");
      await records().updateOne({ _id: target._id }, { $set: { data: source.data } });
      const error = await repeat("k-target");
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("moved");
    });

    it("refuses a sealed answer moved into a record of another tenant's conversation", async () => {
      const source = await answered("k-stolen");
      const { _id: theirs } = await app.database.conversations.create(eve.principal);
      // Eve's record of the same key in her own conversation, given alice's sealed answer and hash.
      const target = await answered("k-stolen", eve, theirs);
      await records().updateOne({ _id: target._id }, { $set: { data: source.data, validation: source.validation } });
      const error = await repeat("k-stolen", eve, theirs);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("undecryptable");
    });

    it("refuses a clear answer where ciphertext is expected", async () => {
      const doc = await answered("k-clear");
      await records().updateOne({ _id: doc._id }, { $set: { data: JSON.stringify({ answer: "planted" }) } });
      const error = await repeat("k-clear");
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("plaintext");
    });

    it("reads a tool effect's sealed result back, and refuses a clear one planted in its place", async () => {
      const approval = await database.db.collection(COLLECTIONS.approvals).findOne({ conversationId });
      const call = { conversationId, toolCallId: String(approval?.toolCallId) };
      const guard = new ToolIdempotencyGuard({ collection: app.database.idempotency, cipher: app.database.cipher });
      expect(await guard.recorded(call)).toEqual({ status: "completed", result: `recorded ${MARKER} shipped` });
      const effect = await records().findOne({ conversationId, _id: { $regex: "^threadwise\\.tool#" } });
      expect(isCiphertext(effect?.data)).toBe(true);
      await records().updateOne({ _id: effect?._id as string }, { $set: { data: JSON.stringify("recorded planted") } });
      const error = await guard.recorded(call).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("plaintext");
    });
  });

  describe("approvals", () => {
    const approvals = () => database.db.collection<Document & { _id: string }>(COLLECTIONS.approvals);

    it("reads the sealed arguments and decisions back", async () => {
      const read = await app.database.approvals.listByConversation(conversationId, { limit: 10 });
      expect(read.map((a) => a.args.note)).toEqual([`${MARKER} shipped`, `${MARKER} draft`, `${MARKER} never`]);
      expect(read.map((a) => a.decision)).toMatchObject([
        { kind: "approve" },
        { kind: "edit", args: { note: `${MARKER} final` } },
        { kind: "reject", reason: `${MARKER} is wrong` },
      ]);
      for (const raw of await approvals().find({ conversationId }).toArray()) {
        expect(isCiphertext(raw.args)).toBe(true);
        expect(raw.origin).not.toHaveProperty("content");
      }
    });

    it("refuses arguments moved to another approval of the conversation", async () => {
      const [source, target] = await approvals().find({ conversationId }).sort({ createdAt: 1 }).limit(2).toArray();
      await approvals().updateOne({ _id: target._id }, { $set: { args: source.args } });
      const error = await app.database.approvals.get(target._id).catch((e: unknown) => e);
      await approvals().updateOne({ _id: target._id }, { $set: { args: target.args } });
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("moved");
    });

    it("refuses an approval's arguments moved into another tenant's conversation", async () => {
      const source = await approvals().findOne({ conversationId });
      const { _id: theirs } = await app.database.conversations.create(eve.principal);
      // Only the arguments: the copy's context, decision and origin are left out.
      await approvals().insertOne({ _id: randomUUID(), conversationId: theirs, args: source?.args, status: "pending" });
      const error = await app.database.approvals.listByConversation(theirs, { limit: 10 }).catch((e: unknown) => e);
      await approvals().deleteMany({ conversationId: theirs });
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("undecryptable");
    });

    it("refuses clear arguments, or a clear edit, where ciphertext is expected", async () => {
      const edit = await approvals().findOne({ conversationId, "decision.kind": "edit" });
      await approvals().updateOne({ _id: edit?._id as string }, { $set: { "decision.args": { note: "planted" } } });
      const planted = await app.database.approvals.get(edit?._id as string).catch((e: unknown) => e);
      await approvals().updateOne({ _id: edit?._id as string }, { $set: { "decision.args": edit?.decision.args, args: { note: "planted" } } });
      const clear = await app.database.approvals.get(edit?._id as string).catch((e: unknown) => e);
      await approvals().updateOne({ _id: edit?._id as string }, { $set: { args: edit?.args } });
      expect([planted, clear].map((e) => (e as ContentRefusedError).reason)).toEqual(["plaintext", "plaintext"]);
      expect(planted).toBeInstanceOf(ContentRefusedError);
    });
  });

  it("rotates the tenant's key mid-conversation: later turns use the new key and every turn reads back", async () => {
    const { keyId } = await app.database.rotateTenantKey("api", "acme");
    const result = await ask(conversationId, `after the rotation, ${MARKER}`);
    expect(result.status).toBe("completed");
    const raw = await database.db.collection(COLLECTIONS.messages).findOne({ _id: `${result.turnId}:user` } as never);
    expect(Buffer.from(raw?.content.buffer).includes(Buffer.from(keyId))).toBe(true);
    const messages = await app.database.messages.list(conversationId);
    expect(messages.map((m) => m.content)).toContain(`after the rotation, ${MARKER}`);
    expect(messages[0].content).toBe(`hello, remember ${MARKER}`);
  });

  it("erases the tenant by shredding its keys: the receipt names them, the audit log records it, a copy taken before is undecryptable", async () => {
    const { _id: theirs } = await app.database.conversations.create(eve.principal);
    await ask(theirs, "globex's own question", eve);
    const copy = await rawDocuments();
    const conversations = await database.db.collection(COLLECTIONS.conversations).find({}).toArray();
    const termKeys = await database.db.collection(COLLECTIONS.termKeys).find({}).toArray();
    const audit = new AuditLog(database.db, { retentionDays: 30 });
    const eraser = new Eraser({ database: app.database, audit, auditRetentionDays: 30 });
    const receipt = await eraser.erase({ target: { kind: "tenant", issuer: "api", tenant: "acme" }, actor: operator, channel: "cli" });
    expect(receipt.method).toBe("crypto-shredding");
    expect(receipt.keys).toMatchObject({ source: "local", ids: [expect.any(String), expect.any(String)] });
    expect(new Date(receipt.keys?.finalAt ?? 0).getTime()).toBeGreaterThan(new Date(receipt.keys?.shreddedAt ?? 0).getTime());
    expect(receipt.pending.find((p) => p.where === "MongoDB backups")?.until).toBe(receipt.keys?.finalAt);
    // What stays clear is named, not claimed shredded; every content field is encrypted, the checkpoints' included.
    const clear = receipt.pending.find((p) => p.where === "MongoDB backups (not encrypted)")?.what;
    expect(clear).toContain("embeddings");
    expect(clear).not.toMatch(/checkpoint|idempotency|approvals/);
    expect(verifyReceipt(receipt)).toBe(true);
    const [shred] = (await audit.list({ issuer: "api", tenant: "acme" }, { limit: 10 })).filter((r) => r.action === "key.shred");
    expect(shred).toMatchObject({ actor: operator, resource: { keyIds: receipt.keys?.ids.join(",") } });
    // No key material in the audit log: only ids.
    expect(JSON.stringify(shred)).not.toMatch(/"key":/);
    // The backup, restored into a database of its own and read with the same key directory.
    const restored = testDatabase("contents_restored");
    await restored.client.connect();
    try {
      for (const [name, docs] of Object.entries({ ...copy, [COLLECTIONS.conversations]: conversations, [COLLECTIONS.termKeys]: termKeys })) {
        if (docs.length > 0) await restored.db.collection(name).insertMany(docs);
      }
      const reader = new ThreadwiseDatabase(restored.client, { dbName: restored.dbName, contentKeys: new LocalTenantKeys(keysDir) });
      const error = await reader.messages.list(conversationId).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("undecryptable");
      // The recall index's term key is sealed by the shredded keys too: its hashes cannot be linked to words again.
      await expect(reader.recall.queryTerms(conversationId, ["zebra"])).rejects.toBeInstanceOf(ContentRefusedError);
      expect((await reader.messages.list(theirs)).map((m) => m.content)).toContain("globex's own question");
    } finally {
      await restored.cleanup();
    }
  });
});

const earlierRelease = useTestDatabase("contents_checkpoints_earlier", { clearBeforeEach: false });

describe("ThreadwiseDatabase.setup on a database written in clear", () => {
  const clear = useTestDatabase("contents_migration", { clearBeforeEach: false });
  const earlier = useTestDatabase("contents_earlier", { clearBeforeEach: false });

  it("seals the checkpoints of a database set up with encryption on before checkpoints were sealed", async () => {
    const earlier = earlierRelease;
    const db = earlier.db;
    // As the release before left it: encryption recorded on, the checkpoints' values clear.
    const before = new ThreadwiseDatabase(earlier.client, { dbName: earlier.dbName });
    await before.setup();
    const { _id: id } = await before.conversations.create(alice.principal);
    const graph = (saver: ThreadwiseDatabase["checkpointer"]) =>
      new StateGraph(MessagesAnnotation)
        .addNode("echo", () => ({ messages: [new AIMessage(`noted ${MARKER}`)] }))
        .addEdge(START, "echo")
        .compile({ checkpointer: saver });
    await graph(before.checkpointer).invoke({ messages: [new HumanMessage(`keep ${MARKER}`)] }, { configurable: { thread_id: id } });
    await db
      .collection(COLLECTIONS.setup)
      .updateOne({ _id: "indexes" as never }, { $set: { contentEncryption: "on", version: 8 }, $unset: { sealedFields: "" } });
    expect(rawText(await db.collection(COLLECTIONS.checkpointBlobs).find({}).toArray())).toContain(MARKER);

    const after = new ThreadwiseDatabase(earlier.client, { dbName: earlier.dbName, contentKeys: new LocalTenantKeys(keysDir) });
    expect(await after.isSetUp()).toBe(false);
    await after.setup();
    for (const name of [COLLECTIONS.checkpoints, COLLECTIONS.checkpointWrites, COLLECTIONS.checkpointBlobs]) {
      const docs = await db.collection(name).find({ thread_id: id }).toArray();
      expect(rawText(docs), name).not.toContain(MARKER);
      expect(clearBinaries(docs), name).toEqual([]);
    }
    const state = await graph(after.checkpointer).invoke({ messages: [new HumanMessage("again")] }, { configurable: { thread_id: id } });
    expect(state.messages.map((m) => String(m.content))).toEqual([`keep ${MARKER}`, `noted ${MARKER}`, "again", `noted ${MARKER}`]);
  });

  it("encrypts every content field, loses nothing, and leaves nothing in clear; a second set-up encrypts nothing", async () => {
    // The fixture, written the way releases before issue 44 wrote it: no keys, every field clear.
    const before = await appOver(clear, false);
    const { _id: id } = await before.database.conversations.create(alice.principal);
    await ask(id, `look_up {"key": "${MARKER}"}`, alice, before);
    for (let i = 0; i < 8; i++) await ask(id, `turn ${i} about ${MARKER}`, alice, before);
    const waiting = await ask(id, `record_effect {"note": "${MARKER} draft"}`, alice, before);
    await before.approvals.decide(id, waiting.approvals?.[0]?.approvalId ?? "", alice, { kind: "edit", args: { note: `${MARKER} final` } });
    // An approval as releases before this one stored it: its resume job with the question.
    await clear.db.collection(COLLECTIONS.approvals).updateMany({ conversationId: id }, { $set: { "origin.content": `record ${MARKER}` } });
    const tags = { conversationId: id, owner: alice.principal };
    const migrated = { answer: `${MARKER} kept for retries` };
    await requestsOf(before).run(scopeOf(alice, id), "k-migrated", `${MARKER} question`, async () => migrated, tags);
    const read = async (db: ThreadwiseDatabase) => {
      const turns = await db.turns.list(id, { limit: 50 });
      return {
        approvals: (await db.approvals.listByConversation(id, { limit: 10 })).map(({ args, decision }) => ({ args, decision })),
        messages: await db.messages.list(id),
        turns,
        calls: await Promise.all(turns.map((t) => db.turns.listCalls(t._id))),
        archive: JSON.stringify(await db.archive.read(id, 1, 20)),
        artifacts: await Promise.all(
          (await clear.db.collection(COLLECTIONS.artifacts).find({ kind: "artifact" }).toArray()).map((a) =>
            db.artifacts.get(String(a._id), { conversationId: id, reader: alice.principal }),
          ),
        ),
      };
    };
    const written = await read(before.database);
    const checkpointsWritten = await checkpointsOf(before.database, id);
    expect(checkpointsWritten).toContain(MARKER);
    expect(written.archive).toContain(MARKER);
    expect(JSON.stringify(written.artifacts)).toContain(MARKER);
    expect(JSON.stringify(await rawDocuments(clear.db))).toContain(MARKER);
    expect(rawText(await clear.db.collection(COLLECTIONS.recallIndex).find({}).toArray())).toContain("zebra");
    await before.close();

    const after = new ThreadwiseDatabase(clear.client, { dbName: clear.dbName, contentKeys: new LocalTenantKeys(keysDir) });
    await after.setup();
    for (const name of new Set(Object.values(COLLECTIONS))) {
      const left = NOT_ENCRYPTED[name];
      if (left === "all") continue;
      const docs = (await clear.db.collection(name).find({}).toArray()).map((doc) => withoutFields(doc, left ?? []));
      expect(rawText(docs).toLowerCase(), name).not.toContain("zebra");
    }
    expect(await read(after)).toEqual(written);
    // Every checkpoint reads back as it was written, every value now a ciphertext.
    expect(await checkpointsOf(after, id)).toEqual(checkpointsWritten);
    for (const name of [COLLECTIONS.checkpoints, COLLECTIONS.checkpointWrites, COLLECTIONS.checkpointBlobs]) {
      expect(clearBinaries(await clear.db.collection(name).find({}).toArray()), name).toEqual([]);
    }
    const provenance = [
      ...(
        await clear.db
          .collection(COLLECTIONS.modelCalls)
          .find({ sources: { $exists: true } })
          .toArray()
      ).map((c) => c.sources),
      ...(
        await clear.db
          .collection(COLLECTIONS.artifacts)
          .find({ provenance: { $exists: true } })
          .toArray()
      ).map((a) => a.provenance),
    ];
    expect(provenance.length).toBeGreaterThan(0);
    expect(provenance.every(isCiphertext)).toBe(true);
    // The idempotency record answers a repeat with the first response, its answer and question's hash now sealed.
    const record = await clear.db.collection(COLLECTIONS.idempotency).findOne({ conversationId: id });
    expect([isCiphertext(record?.data), isCiphertext(record?.validation)]).toEqual([true, true]);
    const repeated = new IdempotentRequests({ collection: after.idempotency, cipher: after.cipher });
    expect(await repeated.run(scopeOf(alice, id), "k-migrated", `${MARKER} question`, async () => ({ answer: "ran twice" }), tags)).toEqual(migrated);
    expect(await after.encryptStoredContents()).toEqual({ encrypted: 0, orphaned: 0 });
    // The conversation continues: the next turn's messages extend the list as stored (its digests were keyed by set-up).
    const roots = () => clear.db.collection(COLLECTIONS.checkpointBlobs).countDocuments({ thread_id: id, type: "list", base: { $exists: false } });
    const rootsBefore = await roots();
    const resumed = await appOver(clear, true);
    try {
      expect((await ask(id, `after set-up, ${MARKER}`, alice, resumed)).status).toBe("completed");
      const messages = (await resumed.database.messages.list(id)).map((m) => m.content);
      expect(messages).toContain(`after set-up, ${MARKER}`);
      expect(messages).toContain(`turn 7 about ${MARKER}`);
      const state = await resumed.database.checkpointer.getTuple({ configurable: { thread_id: id } });
      expect(JSON.stringify(state?.checkpoint.channel_values)).toContain(`after set-up, ${MARKER}`);
      expect(await roots()).toBe(rootsBefore);
    } finally {
      await resumed.close();
    }
  }, 240_000);
  it("seals the fields this release adds in a database a release before set up with encryption on", async () => {
    const before = await appOver(earlier, false);
    const { _id: id } = await before.database.conversations.create(alice.principal);
    const waiting = await ask(id, `record_effect {"note": "${MARKER} earlier"}`, alice, before);
    await before.close();
    // As the release before left it: set up with encryption on, before approvals' arguments were sealed.
    await earlier.db.collection(COLLECTIONS.setup).updateOne({ _id: "indexes" as never }, { $set: { contentEncryption: "on" }, $unset: { sealedFields: "" } });
    const after = new ThreadwiseDatabase(earlier.client, { dbName: earlier.dbName, contentKeys: new LocalTenantKeys(keysDir) });
    await after.setup();
    const raw = await earlier.db.collection(COLLECTIONS.approvals).findOne({ conversationId: id });
    expect(isCiphertext(raw?.args)).toBe(true);
    expect((await after.approvals.get(waiting.approvals?.[0]?.approvalId ?? ""))?.args).toEqual({ note: `${MARKER} earlier` });
  }, 240_000);
});
