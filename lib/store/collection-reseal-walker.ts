import type { Binary, Collection, Document, Filter } from "mongodb";
import { fieldValue } from "../crypto/content-cipher.js";
import type { TenantRef } from "../crypto/tenant-keys.js";
import type { ResealCursor, ResealPass, ResealWalker } from "./content-resealer.js";

/** Times a document is read again when a concurrent write changed one of its sealed fields between the read and the re-seal. */
const RACE_RETRIES = 3;

/** One collection a {@link CollectionResealWalker} walks, and whose its documents are. */
export interface ResealedCollection {
  collection: Collection<Document>;
  /** The sealed fields (as `ENCRYPTED_FIELDS` names them). */
  fields: readonly string[];
  /**
   * Whose a document is: `conversation`, the conversation it belongs to (its `conversationId`, or its own `_id`
   * for a conversation), sealed under that conversation's tenant's key; `tenant`, a record sealed under a tenant
   * named directly (a recall term key), found by `tenantFilter`.
   */
  owner:
    | { kind: "conversation"; conversationOf: (doc: Document) => string | undefined }
    | { kind: "tenant"; tenantFilter: (tenant: TenantRef) => Filter<Document> };
}

/**
 * Re-seals the sealed fields of some collections, one after the other, each in `_id` order in
 * batches (docs/security.md, "Rotation"). Only the pass's tenant's documents are touched (its
 * conversations', asked once a batch), and each is written back with its old ciphertexts in the
 * update's filter: a concurrent write (a turn under way) wins, and the document is read again.
 */
export class CollectionResealWalker implements ResealWalker {
  readonly name: string;
  readonly #collections: readonly ResealedCollection[];

  constructor(name: string, collections: readonly ResealedCollection[]) {
    this.name = name;
    this.#collections = collections;
  }

  async reseal(pass: ResealPass): Promise<boolean> {
    const start = pass.after ? this.#collections.findIndex((c) => c.collection.collectionName === pass.after?.collection) : 0;
    for (const spec of this.#collections.slice(Math.max(start, 0))) {
      const after = pass.after?.collection === spec.collection.collectionName ? pass.after : undefined;
      if (!(await this.#walk(spec, pass, after))) return false;
    }
    return true;
  }

  async #walk(spec: ResealedCollection, pass: ResealPass, after: ResealCursor | undefined): Promise<boolean> {
    const name = spec.collection.collectionName;
    const scope: Filter<Document> = spec.owner.kind === "tenant" ? spec.owner.tenantFilter(pass.tenant) : {};
    const projection = Object.fromEntries([["conversationId", 1], ...spec.fields.map((f) => [f, 1])]);
    let lastId: unknown = after?.lastId;
    for (;;) {
      const filter = (lastId === undefined ? scope : { $and: [scope, { _id: { $gt: lastId } }] }) as Filter<Document>;
      const docs = await spec.collection.find(filter, { projection }).sort({ _id: 1 }).limit(pass.batchSize).toArray();
      if (docs.length === 0) return true;
      const owners = spec.owner.kind === "conversation" ? spec.owner.conversationOf : () => undefined;
      const owned = spec.owner.kind === "conversation" ? await pass.ownedByTenant([...new Set(docs.flatMap((d) => owners(d) ?? []))]) : new Set<string>();
      let resealed = 0;
      let raced = 0;
      for (const doc of docs) {
        const conversationId = owners(doc);
        if (spec.owner.kind === "conversation" && (conversationId === undefined || !owned.has(conversationId))) continue;
        const outcome = await this.#resealDocument(spec, pass, doc, conversationId);
        resealed += outcome.resealed;
        raced += outcome.raced;
      }
      lastId = docs[docs.length - 1]._id;
      if (!(await pass.onBatch({ walker: this.name, collection: name, lastId, examined: docs.length, resealed, raced }))) return false;
    }
  }

  /** Re-seals one document's fields, reading it again (at most {@link RACE_RETRIES} times) when a write got there first. */
  async #resealDocument(spec: ResealedCollection, pass: ResealPass, first: Document, conversationId: string | undefined) {
    let doc: Document | null = first;
    let raced = 0;
    for (let attempt = 0; doc && attempt <= RACE_RETRIES; attempt++) {
      const sealed: Record<string, Binary> = {};
      for (const field of spec.fields) {
        const ref = { collection: spec.collection.collectionName, id: String(doc._id), field };
        // A dotted field (an approval's `decision.args`) is read where it is nested.
        const stored = fieldValue(doc, field);
        const next = conversationId === undefined ? await pass.resealFor(ref, stored) : await pass.reseal(conversationId, ref, stored);
        if (next) sealed[field] = next;
      }
      const fields = Object.keys(sealed);
      if (fields.length === 0) return { resealed: 0, raced };
      // The old ciphertexts in the filter: a turn that rewrote a field meanwhile (under the current key) is not overwritten.
      const unchanged = Object.fromEntries(fields.map((f) => [f, fieldValue(doc as Document, f)]));
      const { matchedCount } = await spec.collection.updateOne({ _id: doc._id, ...unchanged }, { $set: sealed });
      if (matchedCount === 1) return { resealed: fields.length, raced };
      raced += 1;
      doc = await spec.collection.findOne({ _id: doc._id }, { projection: Object.fromEntries(spec.fields.map((f) => [f, 1])) });
    }
    return { resealed: 0, raced };
  }
}
