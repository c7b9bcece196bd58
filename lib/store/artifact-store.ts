import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import { createHash, randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { Principal } from "../auth/principal.js";
import type { Provenance } from "../auth/data-visibility.js";
import { DocumentTooLargeError } from "../errors.js";
import { countTextTokens } from "../model-view/token-counter.js";
import { COLLECTIONS } from "./collections.js";
import type { WriteFence } from "./write-fence.js";

/** Largest tool output stored, in UTF-8 bytes; a larger one is refused with `DocumentTooLargeError`. */
export const DEFAULT_MAX_ARTIFACT_BYTES = 16 * 1024 * 1024;
/** Content up to this many UTF-8 bytes is kept in one document; more is split into parts of this size, far below MongoDB's 16 MB. */
export const DEFAULT_ARTIFACT_PART_BYTES = 4 * 1024 * 1024;
/** Characters of the output kept as its preview. */
export const DEFAULT_PREVIEW_CHARS = 400;

/** What the checkpointed ToolMessage carries instead of the payload (as its `artifact`). */
export interface ArtifactRef {
  handle: string;
  bytes: number;
  tokens: number;
  preview: string;
}

export interface StoredArtifact extends ArtifactRef {
  conversationId: string;
  createdBy: Principal;
  turnId: string;
  toolCallId: string;
  toolName: string;
  content: string;
  createdAt: Date;
  /** What a reader needs to see it (`lib/auth/data-visibility.ts`); absent on artifacts stored before provenance. */
  provenance?: Provenance;
}

export interface NewArtifact {
  /** Whose tool call produced it. */
  createdBy: Principal;
  turnId: string;
  toolCallId: string;
  toolName: string;
  content: string;
  /** What a reader needs to see it, stored in the same document as the content. Default: none (judged by its tool's roles). */
  provenance?: Provenance;
  /** The content's tokens, when the caller has counted them already (tokenizing megabytes takes seconds). */
  tokens?: number;
}

/** Who reads an artifact, and in which conversation. */
export interface ArtifactScope {
  conversationId: string;
  reader: Principal;
}

interface ArtifactHead {
  _id: string;
  kind: "artifact";
  conversationId: string;
  createdBy: Principal;
  turnId: string;
  toolCallId: string;
  toolName: string;
  bytes: number;
  tokens: number;
  preview: string;
  createdAt: Date;
  /** Beside the content (and its preview) it governs. */
  provenance?: Provenance;
  /** The whole content, when it fits in one part. */
  content?: string;
  /** The parts' write attempt and count, when split: parts of a failed attempt are never read. */
  partSet?: string;
  parts?: number;
  /** The turn attempt (lease epoch) that stored it: a stale attempt takes back only its own. */
  attempt: number;
  expiresAt: Date;
}

interface ArtifactPart {
  _id: string;
  kind: "part";
  conversationId: string;
  handle: string;
  partSet: string;
  index: number;
  content: string;
  createdAt: Date;
  expiresAt: Date;
}

type ArtifactDocument = ArtifactHead | ArtifactPart;

export interface ArtifactStoreOptions {
  /** Default: DEFAULT_MAX_ARTIFACT_BYTES. */
  maxBytes?: number;
  /** Default: DEFAULT_ARTIFACT_PART_BYTES. */
  partBytes?: number;
  /** Default: DEFAULT_PREVIEW_CHARS. */
  previewChars?: number;
  /** Where `content` and `preview` are encrypted. Default: stored clear (`CLEAR_FIELDS`); the database passes its own. */
  cipher?: ContentCipher;
}

/** The first `chars` characters, never cutting a surrogate pair, with "…" when something was cut. */
export function previewOf(content: string, chars = DEFAULT_PREVIEW_CHARS): string {
  if (content.length <= chars) return content;
  const last = content.charCodeAt(chars - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? chars - 1 : chars;
  return `${content.slice(0, end)}…`;
}

/**
 * The handle is derived from the conversation and the tool call, so a retried put names the
 * same document and the output is stored once. 96 bits keep handles short enough to quote.
 */
function handleFor(conversationId: string, toolCallId: string): string {
  return `art_${createHash("sha256").update(`${conversationId}\u0000${toolCallId}`).digest("hex").slice(0, 24)}`;
}

/** Splits on UTF-8 byte counts without cutting a character. */
function splitByBytes(content: string, partBytes: number): string[] {
  const buffer = Buffer.from(content, "utf8");
  const parts: string[] = [];
  let start = 0;
  while (start < buffer.length) {
    let end = Math.min(start + partBytes, buffer.length);
    // Step back over continuation bytes (10xxxxxx) so the cut falls between characters.
    while (end < buffer.length && (buffer[end] & 0xc0) === 0x80) end -= 1;
    parts.push(buffer.toString("utf8", start, end));
    start = end;
  }
  return parts;
}

function refOf(head: ArtifactHead): ArtifactRef {
  return { handle: head._id, bytes: head.bytes, tokens: head.tokens, preview: head.preview };
}

/**
 * Tool outputs too large for the model view, stored once per tool call with a handle the
 * model can pass to `read_tool_output`. Reads are scoped to a conversation.
 */
export class ArtifactStore {
  readonly collection: Collection<ArtifactDocument>;
  /** Largest content `put` stores, in UTF-8 bytes. */
  readonly maxBytes: number;
  private readonly partBytes: number;
  private readonly previewChars: number;
  readonly #cipher: ContentCipher;

  constructor(db: Db, options: ArtifactStoreOptions = {}) {
    this.#cipher = options.cipher ?? CLEAR_FIELDS;
    this.collection = db.collection<ArtifactDocument>(COLLECTIONS.artifacts);
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
    this.partBytes = options.partBytes ?? DEFAULT_ARTIFACT_PART_BYTES;
    this.previewChars = options.previewChars ?? DEFAULT_PREVIEW_CHARS;
  }

  async setup(): Promise<void> {
    await this.collection.createIndex({ conversationId: 1 }, { name: "conversation" });
    await this.collection.createIndex({ handle: 1, partSet: 1, index: 1 }, { name: "parts" });
  }

  /**
   * Stores the output once, while `fence` holds (the turn still holds the conversation); a
   * retry for the same conversation and tool call returns the first stored reference, whatever
   * content it carries.
   * @throws DocumentTooLargeError when the content is over the configured maximum.
   * @throws StaleWriterError when the fence was lost; nothing of this call is left stored.
   */
  async put(artifact: NewArtifact, fence: WriteFence, now = new Date()): Promise<ArtifactRef> {
    const { conversationId } = fence;
    const scope = { conversationId, reader: artifact.createdBy };
    const handle = handleFor(conversationId, artifact.toolCallId);
    const existing = await this.findHead(handle, scope);
    if (existing) return refOf(await this.#open(existing));

    const bytes = Buffer.byteLength(artifact.content, "utf8");
    if (bytes > this.maxBytes) {
      throw new DocumentTooLargeError(`tool output of ${bytes} bytes is over the ${this.maxBytes}-byte artifact limit`, bytes, this.maxBytes);
    }
    const head: ArtifactHead = {
      _id: handle,
      kind: "artifact",
      conversationId,
      createdBy: artifact.createdBy,
      turnId: artifact.turnId,
      toolCallId: artifact.toolCallId,
      toolName: artifact.toolName,
      bytes,
      tokens: artifact.tokens ?? countTextTokens(artifact.content),
      preview: (await this.#cipher.sealText(conversationId, artifactRef(handle, "preview"), previewOf(artifact.content, this.previewChars))) as string,
      createdAt: now,
      // Who and what it was fetched with (tools, roles, users) is sealed beside it, and read only with it.
      ...(artifact.provenance && {
        provenance: (await this.#cipher.sealJson(conversationId, artifactRef(handle, "provenance"), artifact.provenance)) as Provenance,
      }),
      attempt: fence.epoch ?? 0,
      expiresAt: fence.expiresAt,
    };
    // Parts are written before the head, so a head always names a complete set.
    const partSet = randomUUID();
    const parts = bytes <= this.partBytes ? [] : splitByBytes(artifact.content, this.partBytes);
    if (parts.length === 0) head.content = (await this.#cipher.sealText(conversationId, artifactRef(handle, "content"), artifact.content)) as string;
    else Object.assign(head, { partSet, parts: parts.length });
    await fence.guard(
      async () => {
        for (const [index, text] of parts.entries()) {
          const _id = `${handle}.${partSet}.${index}`;
          const content = (await this.#cipher.sealText(conversationId, artifactRef(_id, "content"), text)) as string;
          await this.collection.insertOne({ _id, kind: "part", conversationId, handle, partSet, index, content, createdAt: now, expiresAt: fence.expiresAt });
        }
        const { _id, ...fields } = head;
        await this.collection.updateOne({ _id }, { $setOnInsert: fields }, { upsert: true });
      },
      () =>
        this.collection.deleteMany({
          $or: [
            { kind: "part", handle, partSet },
            { _id: handle, kind: "artifact", attempt: head.attempt },
          ],
        }),
    );
    // A concurrent put may have won: answer with what is stored.
    const stored = await this.findHead(handle, scope);
    return refOf(await this.#open(stored ?? head));
  }

  /**
   * The artifact, or undefined when the handle is unknown, belongs to another conversation, or was
   * made for a principal of another issuer or tenant than the reader. The conversation's owner is
   * checked before any tool runs; this keeps an output inside its issuer and tenant besides.
   */
  async get(handle: string, scope: ArtifactScope): Promise<StoredArtifact | undefined> {
    const { conversationId } = scope;
    const found = await this.findHead(handle, scope);
    if (!found) return undefined;
    const head = await this.#open(found);
    let content = head.content ?? "";
    if (head.partSet !== undefined) {
      const parts = (await this.collection
        .find({ kind: "part", handle, partSet: head.partSet, conversationId })
        .sort({ index: 1 })
        .toArray()) as ArtifactPart[];
      if (parts.length !== head.parts) return undefined;
      const texts = await Promise.all(parts.map((p) => this.#cipher.openText(conversationId, artifactRef(p._id, "content"), p.content)));
      content = texts.join("");
    }
    return {
      ...refOf(head),
      conversationId: head.conversationId,
      createdBy: head.createdBy,
      turnId: head.turnId,
      toolCallId: head.toolCallId,
      toolName: head.toolName,
      content,
      createdAt: head.createdAt,
      ...(head.provenance && { provenance: head.provenance }),
    };
  }

  /** Removes every artifact of the conversation, parts included. */
  async deleteByConversation(conversationId: string): Promise<void> {
    await this.collection.deleteMany({ conversationId });
  }

  /** The head with its preview, (unsplit) content and provenance decrypted. */
  async #open(head: ArtifactHead): Promise<ArtifactHead> {
    const ref = (field: "content" | "preview" | "provenance") => artifactRef(head._id, field);
    const preview = await this.#cipher.openText(head.conversationId, ref("preview"), head.preview);
    const content = head.content === undefined ? undefined : await this.#cipher.openText(head.conversationId, ref("content"), head.content);
    const provenance =
      head.provenance === undefined ? undefined : await this.#cipher.openJson<Provenance>(head.conversationId, ref("provenance"), head.provenance);
    return { ...head, preview, ...(content !== undefined && { content }), ...(provenance !== undefined && { provenance }) };
  }

  private async findHead(handle: string, { conversationId, reader }: ArtifactScope): Promise<ArtifactHead | undefined> {
    const doc = await this.collection.findOne({
      _id: handle,
      conversationId,
      kind: "artifact",
      "createdBy.issuer": reader.issuer,
      "createdBy.tenant": reader.tenant,
    });
    return (doc as ArtifactHead | null) ?? undefined;
  }
}

/** Where an artifact's field is encrypted: its head or part document and the field. */
function artifactRef(id: string, field: "content" | "preview" | "provenance"): FieldRef {
  return { collection: COLLECTIONS.artifacts, id, field };
}
