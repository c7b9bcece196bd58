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
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { AuditLog } from "../../lib/audit/audit-log.js";
import { Eraser, verifyReceipt } from "../../lib/lifecycle/eraser.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { ContentRefusedError } from "../../lib/errors.js";
import { apiTurnJob } from "../../lib/queue/turn-dispatcher.js";
import { ConversationSearch } from "../../lib/recall/conversation-search.js";
import { recallTerms } from "../../lib/recall/recall-terms.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { ENCRYPTED_COLLECTIONS, ThreadwiseDatabase } from "../../lib/store/database.js";
import { CLEAR_METADATA_KEYS } from "../../lib/store/threadwise-saver.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
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
const NOT_ENCRYPTED: Partial<Record<string, readonly string[] | "all">> = {
  [COLLECTIONS.idempotency]: "all",
  [COLLECTIONS.approvals]: ["args", "decision", "origin"],
};

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

beforeAll(async () => {
  keysDir = await mkdtemp(join(tmpdir(), "threadwise-contents-"));
  app = await appOver();
  ({ _id: conversationId } = await app.database.conversations.create(alice.principal));
  await ask(conversationId, `hello, remember ${MARKER}`);
  await ask(conversationId, `look_up {"key": "${MARKER}"}`);
  const paused = await ask(conversationId, `record_effect {"note": "${MARKER} shipped"}`);
  expect(paused.status).toBe("awaiting_approval");
  await app.approvals.decide(conversationId, paused.approvals?.[0]?.approvalId ?? "", alice, { kind: "approve" });
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
    // What is not encrypted yet is named, not claimed shredded.
    expect(receipt.pending.find((p) => p.where === "MongoDB backups (contents not encrypted yet)")?.what).toContain("checkpoint_blobs");
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
      .updateOne({ _id: "indexes" as never }, { $set: { contentEncryption: "on", version: 8 }, $unset: { checkpointContents: "" } });
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
    const read = async (db: ThreadwiseDatabase) => {
      const turns = await db.turns.list(id, { limit: 50 });
      return {
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
});
