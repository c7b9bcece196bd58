import { createHash, type Hash } from "node:crypto";
import { mkdir, open, readFile, writeFile, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { BSON, type Db, type Document } from "mongodb";
import { canonicalHash } from "../audit/canonical-json.js";
import { ConflictError, ValidationError } from "../errors.js";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "../store/collections.js";
import { isCheckpointCollection, openedCheckpointDocument } from "../store/checkpoint/checkpoint-export.js";
import { fieldValue, withFieldValue } from "../crypto/content-cipher.js";
import { ENCRYPTED_FIELDS } from "../store/database.js";
import {
  CONVERSATION_COLLECTIONS,
  limitScopeFilter,
  principalFilter,
  subjectOf,
  usageFilter,
  type DataSubject,
  type TenantTarget,
  type UserTarget,
} from "./data-subject.js";

/** The format an export names in its manifest: one MongoDB Extended JSON (canonical) document per line, per collection. */
export const EXPORT_FORMAT = "threadwise-export/1" as const;
const BATCH = 50;

/** One exported document: its collection and its line (canonical Extended JSON, so dates, binaries and numbers come back as they were). */
export interface ExportLine {
  collection: string;
  line: string;
}

/** What an export holds: per collection, its documents and the SHA-256 of its lines (each followed by `\n`), and a hash over the rest. */
export interface ExportManifest {
  format: typeof EXPORT_FORMAT;
  target: UserTarget | TenantTarget;
  exportedAt: string;
  collections: Record<string, { count: number; sha256: string }>;
  /** What an export leaves out on purpose, and why. */
  excluded: Record<string, string>;
  hash: string;
}

/** Left out of every export: secrets that are no one's to take away, and what only ever names others. */
export const EXPORT_EXCLUDED: Record<string, string> = {
  [COLLECTIONS.mcpOAuthTokens]: "OAuth tokens are secrets sealed under this deployment's keys; a user signs in again where the data goes",
  [COLLECTIONS.mcpOAuthSignIns]: "sign-ins under way expire within minutes",
  [COLLECTIONS.limitCounters]: "what counts against limits now (turns this minute, reservations) is rebuilt by use",
};

/** Accumulates each collection's count and hash as lines are written. */
export class ManifestBuilder {
  private readonly hashes = new Map<string, { count: number; hash: Hash }>();

  add({ collection, line }: ExportLine): void {
    let entry = this.hashes.get(collection);
    if (!entry) this.hashes.set(collection, (entry = { count: 0, hash: createHash("sha256") }));
    entry.count += 1;
    entry.hash.update(`${line}\n`);
  }

  build(target: UserTarget | TenantTarget, exportedAt: Date): ExportManifest {
    const collections = Object.fromEntries(
      [...this.hashes.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, e]) => [name, { count: e.count, sha256: e.hash.digest("hex") }]),
    );
    const body = { format: EXPORT_FORMAT, target, exportedAt: exportedAt.toISOString(), collections, excluded: EXPORT_EXCLUDED };
    return { ...body, hash: canonicalHash(body) };
  }
}

/**
 * A user's or tenant's data, document by document (docs/data-lifecycle.md, "Export"): the
 * conversations they own whole; in threads others own, their turns, the messages of those turns,
 * and what they made there (artifacts, approvals, follow-ups); their idempotency records and
 * queued jobs; their usage and limits; a tenant's MCP servers. Each document once, as stored.
 */
/**
 * A document as exported: its encrypted content fields decrypted (docs/security.md, "Contents at rest"), so
 * the export holds the requester's contents in clear and an import encrypts them under the keys of the
 * database it goes to (set-up does). A field that will not decrypt stops the export (`ContentRefusedError`).
 */
export async function openedForExport(collection: string, doc: Document, cipher: ContentCipher): Promise<Document> {
  // Checkpoints: every serialized value sealed by the checkpointer (docs/storage.md, "Checkpoint storage").
  if (isCheckpointCollection(collection)) return openedCheckpointDocument(collection, doc, cipher);
  const fields = (ENCRYPTED_FIELDS as Record<string, Record<string, "text" | "json">>)[collection];
  if (!fields) return doc;
  const conversationId = collection === COLLECTIONS.conversations ? doc._id : doc.conversationId;
  let out: Document = { ...doc };
  for (const [field, kind] of Object.entries(fields)) {
    const stored = fieldValue(doc, field);
    if (!cipher.isSealed(stored)) continue;
    const ref = { collection, id: String(doc._id), field };
    out = withFieldValue(out, field, kind === "text" ? await cipher.openText(conversationId, ref, stored) : await cipher.openJson(conversationId, ref, stored));
  }
  return out;
}

/**
 * @param cipher What decrypts contents for the requester (the database's). Default: none, contents exported
 * as stored (an encrypted field stops the export, `encryption_off`).
 */
export async function* exportData(db: Db, target: UserTarget | TenantTarget, cipher: ContentCipher = CLEAR_FIELDS): AsyncGenerator<ExportLine> {
  const who = subjectOf(target);
  const seen = new Set<string>();
  const emit = async function* (collection: string, docs: Document[]): AsyncGenerator<ExportLine> {
    for (const doc of docs) {
      const key = `${collection}|${BSON.EJSON.stringify(doc._id)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      yield { collection, line: BSON.EJSON.stringify(await openedForExport(collection, doc, cipher), { relaxed: false }) };
    }
  };
  const owned = target.kind === "user" ? principalFilter("owner", who) : principalFilter("owner", { issuer: who.issuer, tenant: who.tenant });
  const conversations = db.collection<{ _id: string; channel?: { key?: string } }>(COLLECTIONS.conversations);
  let after: string | undefined;
  for (;;) {
    const batch = await conversations
      .find({ ...owned, ...(after !== undefined && { _id: { $gt: after } }) })
      .sort({ _id: 1 })
      .limit(BATCH)
      .toArray();
    if (batch.length === 0) break;
    after = batch[batch.length - 1]._id;
    const ids = batch.map((c) => c._id);
    for (const [name, field] of CONVERSATION_COLLECTIONS)
      yield* emit(
        name,
        await db
          .collection(name)
          .find({ [field]: { $in: ids } })
          .sort({ _id: 1 })
          .toArray(),
      );
    const jobKeys = [...ids, ...batch.flatMap((c) => (c.channel?.key === undefined ? [] : [c.channel.key]))];
    yield* emit(
      COLLECTIONS.turnJobs,
      await db
        .collection(COLLECTIONS.turnJobs)
        .find({ "job.conversationKey": { $in: jobKeys } })
        .sort({ _id: 1 })
        .toArray(),
    );
  }
  yield* exportElsewhere(db, who, emit);
}

/** Their part of threads others own, and what is kept per person or tenant. */
async function* exportElsewhere(
  db: Db,
  who: DataSubject,
  emit: (collection: string, docs: Document[]) => AsyncGenerator<ExportLine>,
): AsyncGenerator<ExportLine> {
  const find = (name: string, filter: Document) => db.collection(name).find(filter).sort({ _id: 1 }).toArray();
  const turns = await find(COLLECTIONS.turns, principalFilter("askedBy", who));
  yield* emit(COLLECTIONS.turns, turns);
  for (let i = 0; i < turns.length; i += BATCH) {
    const ids = turns.slice(i, i + BATCH).map((t) => t._id);
    yield* emit(COLLECTIONS.messages, await find(COLLECTIONS.messages, { turnId: { $in: ids } }));
  }
  const heads = await find(COLLECTIONS.artifacts, principalFilter("createdBy", who));
  yield* emit(COLLECTIONS.artifacts, heads);
  for (let i = 0; i < heads.length; i += BATCH) {
    yield* emit(COLLECTIONS.artifacts, await find(COLLECTIONS.artifacts, { kind: "part", handle: { $in: heads.slice(i, i + BATCH).map((h) => h._id) } }));
  }
  yield* emit(COLLECTIONS.approvals, await find(COLLECTIONS.approvals, principalFilter("requester", who)));
  yield* emit(COLLECTIONS.followUps, await find(COLLECTIONS.followUps, principalFilter("createdBy", who)));
  yield* emit(COLLECTIONS.idempotency, await find(COLLECTIONS.idempotency, principalFilter("owner", who)));
  yield* emit(COLLECTIONS.turnJobs, await find(COLLECTIONS.turnJobs, principalFilter("job.principal", who)));
  yield* emit(COLLECTIONS.usageDaily, await find(COLLECTIONS.usageDaily, usageFilter(who)));
  yield* emit(COLLECTIONS.limitOverrides, await find(COLLECTIONS.limitOverrides, limitScopeFilter("_id", who)));
  if (who.subject === undefined) yield* emit(COLLECTIONS.mcpServers, await find(COLLECTIONS.mcpServers, { issuer: who.issuer, tenant: who.tenant }));
}

/** An export's documents read back, by collection, in the order written. */
export type ExportContents = Map<string, string[]>;

/**
 * Loads an export into a database that holds none of its collections' documents (a fresh one):
 * every collection's count and hash are checked against the manifest first, and the manifest's
 * own hash, so a changed or cut file is refused and nothing is written. Returns documents inserted.
 */
export async function importData(db: Db, manifest: ExportManifest, contents: ExportContents): Promise<Record<string, number>> {
  const { hash, ...body } = manifest;
  if (manifest.format !== EXPORT_FORMAT || canonicalHash(body) !== hash) {
    throw new ValidationError("the manifest is not an export's, or was changed", [{ path: "manifest", message: "hash mismatch" }]);
  }
  for (const [name, expected] of Object.entries(manifest.collections)) {
    const lines = contents.get(name) ?? [];
    const digest = createHash("sha256");
    for (const line of lines) digest.update(`${line}\n`);
    if (lines.length !== expected.count || digest.digest("hex") !== expected.sha256) {
      throw new ValidationError(`${name}: the file does not match the manifest`, [{ path: name, message: "count or hash mismatch" }]);
    }
  }
  for (const name of Object.keys(manifest.collections)) {
    if ((await db.collection(name).countDocuments({}, { limit: 1 })) > 0) {
      throw new ConflictError(`the database already holds ${name} documents: import into a fresh database`);
    }
  }
  const inserted: Record<string, number> = {};
  for (const name of Object.keys(manifest.collections)) {
    const lines = contents.get(name) ?? [];
    inserted[name] = 0;
    for (let i = 0; i < lines.length; i += 500) {
      const docs = lines.slice(i, i + 500).map((line) => BSON.EJSON.parse(line, { relaxed: false }) as Document);
      inserted[name] += (await db.collection(name).insertMany(docs, { ordered: true })).insertedCount;
    }
  }
  return inserted;
}

/** The manifest's file in an export's folder; each collection's documents are in `<collection>.ndjson` beside it. */
export const MANIFEST_FILE = "manifest.json";

/** Writes an export to `dir` (created): one NDJSON file per collection and the manifest, written last. Returns the manifest. */
export async function writeExport(
  db: Db,
  target: UserTarget | TenantTarget,
  dir: string,
  now = new Date(),
  cipher: ContentCipher = CLEAR_FIELDS,
): Promise<ExportManifest> {
  await mkdir(dir, { recursive: true });
  const manifest = new ManifestBuilder();
  const files = new Map<string, FileHandle>();
  try {
    for await (const line of exportData(db, target, cipher)) {
      let file = files.get(line.collection);
      if (!file) files.set(line.collection, (file = await open(join(dir, `${line.collection}.ndjson`), "w")));
      await file.write(`${line.line}\n`);
      manifest.add(line);
    }
  } finally {
    await Promise.all([...files.values()].map((f) => f.close()));
  }
  const built = manifest.build(target, now);
  await writeFile(join(dir, MANIFEST_FILE), `${JSON.stringify(built, null, 2)}\n`);
  return built;
}

/** Reads an export's folder back: its manifest and each collection's lines. */
export async function readExport(dir: string): Promise<{ manifest: ExportManifest; contents: ExportContents }> {
  const manifest = JSON.parse(await readFile(join(dir, MANIFEST_FILE), "utf8")) as ExportManifest;
  const contents: ExportContents = new Map();
  for (const name of Object.keys(manifest.collections)) {
    if (!/^[a-z_]+$/.test(name)) throw new ValidationError(`not a collection name: ${name}`, [{ path: "manifest.collections", message: "unknown name" }]);
    const text = await readFile(join(dir, `${name}.ndjson`), "utf8");
    contents.set(
      name,
      text.split("\n").filter((line) => line.length > 0),
    );
  }
  return { manifest, contents };
}
