import { createHash } from "node:crypto";
import type { Collection, Db, Filter } from "mongodb";
import type { Principal } from "../auth/principal.js";
import type { Approvers } from "../config/approvals-config.js";
import {
  ApprovalConflictError,
  type ApprovalDecisionError,
  ApprovalExpiredError,
  ApprovalSupersededError,
  NotFoundError,
  type ApprovalStanding,
} from "../errors.js";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import { type ContentCipher, fieldValue, isCiphertext, withFieldValue } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "./collections.js";
import type { WriteFence } from "./write-fence.js";

/** `pending` until a person decides, the deadline passes, or a newer turn begins; then final. */
export const APPROVAL_STATUSES = ["pending", "approved", "edited", "rejected", "expired", "superseded"] as const satisfies readonly ApprovalStanding[];
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** What a person decides: run the call, run it with other arguments, or not run it (the model sees the reason). */
export type ApprovalChoice = { kind: "approve" } | { kind: "edit"; args: Record<string, unknown> } | { kind: "reject"; reason?: string };

/** A decision as recorded: who took it and when; an expiry is a rejection nobody took. */
export type ApprovalDecision = (ApprovalChoice & { by: Principal; at: Date; argsHash?: string }) | { kind: "expire"; at: Date };

/** One earlier call of the turn, as an approver is shown it: tool, arguments and output, each a cut excerpt without control characters. */
export interface ApprovalContextCall {
  tool: string;
  /** The arguments as JSON, cut. */
  args: string;
  /** The output (or its preview, for one kept as an artifact), cut. */
  output: string;
  /** The tool's output is untrusted (`trust: "untrusted"`): text from documents, data, other systems. */
  untrusted: boolean;
}

/** What the turn did before the call that waits: the approver sees it next to the arguments (`approvalContextOf`). */
export interface ApprovalContext {
  /** The turn read the output of an untrusted tool before this call. */
  readUntrusted: boolean;
  /** The latest earlier calls of the turn, oldest first. */
  calls: ApprovalContextCall[];
  /** Earlier calls left out (only the latest are kept). */
  omittedCalls: number;
}

/** One call waiting for approval: one document per tool call, its id the interrupt's answer key. */
export interface ApprovalDocument {
  _id: string;
  conversationId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  /** As the model gave them (sealed at rest); an edit's arguments are in `decision`. */
  args: Record<string, unknown>;
  /**
   * True when the arguments are sealed and this store cannot open them (the Slack and Teams
   * webhooks, which carry no Encryption SDK): `args` is then empty, and `argsHash` is what names them.
   */
  argsWithheld?: true;
  argsHash: string;
  /**
   * The tool's arguments JSON Schema when the approval was opened (as offered to the model), as
   * JSON text: what an edit is checked against wherever it comes from (`editedArgumentIssues`).
   * Text, because a schema's keys (`$ref`, `$defs`) are no MongoDB field names.
   */
  argsSchema?: string;
  requester: Principal;
  approvers: Approvers;
  /** The calls and outputs of the turn that led to this one, as the approver sees them. Absent on approvals opened before it was recorded. */
  context?: ApprovalContext;
  createdAt: Date;
  /** When it is rejected as expired unless decided before. */
  deadline: Date;
  status: ApprovalStatus;
  decision?: ApprovalDecision;
  /**
   * How the turn resumes once every call of it is decided: its queue job as the turn's entry point gave
   * it, without the question (`content`), which the turn's own sealed `origin` keeps (`resumeJobOf`).
   */
  origin?: Record<string, unknown>;
  /** When the channel thread was told this call waits (its one notice). */
  noticeAt?: Date;
  /** Fenced writes: the attempt that wrote it, and the conversation's retention. */
  attempt?: number;
  expiresAt?: Date;
}

/**
 * An approval's sealed fields, as `ENCRYPTED_FIELDS` names them: a decision's edited `args` and `reason` in
 * place. Each is bound to the approval's id and its name.
 */
const SEALED = [
  ["context", "json"],
  ["args", "json"],
  ["decision.args", "json"],
  ["decision.reason", "text"],
] as const;

const STATUS_OF = { approve: "approved", edit: "edited", reject: "rejected" } as const satisfies Record<ApprovalChoice["kind"], ApprovalStatus>;

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** SHA-256 of the arguments in a key-order-independent form: what a decision names and a resumed call is checked against. */
export function argsHash(args: unknown): string {
  return createHash("sha256").update(canonical(args)).digest("hex");
}

/** A UUID-shaped id per (conversation, turn, tool call): parallel calls get one each, and a retried turn names the same ones. */
export function approvalIdOf(conversationId: string, turnId: string, toolCallId: string): string {
  const h = createHash("sha256")
    .update(JSON.stringify(["approval", conversationId, turnId, toolCallId]))
    .digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Why a decision on this approval is refused: it expired (or is pending past its deadline), a newer
 * turn superseded it, or it was decided otherwise. The one wording of these refusals, for the store's
 * decisions and for a channel that checks before it opens an edit form.
 */
export function closedApprovalError(approval: Pick<ApprovalDocument, "_id" | "status" | "deadline">): ApprovalDecisionError {
  const id = approval._id;
  if (approval.status === "expired" || approval.status === "pending") {
    return new ApprovalExpiredError(`approval ${id} expired at ${approval.deadline.toISOString()}`, id, "expired");
  }
  if (approval.status === "superseded") return new ApprovalSupersededError(`approval ${id} belongs to a turn a newer one replaced`, id, "superseded");
  return new ApprovalConflictError(`approval ${id} was already decided (${approval.status})`, id, approval.status);
}

/**
 * Approvals: the only writer of an approval's status. A pending approval is decided once; the
 * same decision again returns it unchanged, any other meets the first (`ApprovalConflictError`),
 * and one after the deadline or a newer turn is refused (`ApprovalExpiredError`, `ApprovalSupersededError`).
 */
export class ApprovalStore {
  readonly collection: Collection<ApprovalDocument>;
  readonly #cipher: ContentCipher;

  /**
   * @param cipher Default: contents stored clear (`CLEAR_FIELDS`); the database passes its own. An approval's
   * `context` (earlier calls' arguments and outputs), `args`, and a decision's edited `args` and `reason` are
   * encrypted. A store without the cipher (the Slack and Teams webhooks, which carry no Encryption SDK) reads
   * an encrypted context or decision content as absent and encrypted arguments as withheld (`argsWithheld`).
   */
  constructor(db: Db, cipher: ContentCipher = CLEAR_FIELDS) {
    this.collection = db.collection<ApprovalDocument>(COLLECTIONS.approvals);
    this.#cipher = cipher;
  }

  async #opened(doc: ApprovalDocument): Promise<ApprovalDocument>;
  async #opened(doc: ApprovalDocument | null): Promise<ApprovalDocument | null>;
  async #opened(doc: ApprovalDocument | null): Promise<ApprovalDocument | null> {
    if (!doc) return doc;
    let opened = doc;
    for (const [field, kind] of SEALED) {
      const stored = fieldValue(doc, field);
      if (stored === undefined) continue;
      const ref = { collection: COLLECTIONS.approvals, id: doc._id, field };
      // Without the cipher (the webhooks), what is sealed is withheld, never handed on as if it were content.
      const value =
        !this.#cipher.enabled && isCiphertext(stored)
          ? undefined
          : kind === "text"
            ? await this.#cipher.openText(doc.conversationId, ref, stored)
            : await this.#cipher.openJson(doc.conversationId, ref, stored);
      opened = withFieldValue(opened, field, value);
    }
    return opened.args === undefined ? { ...opened, args: {}, argsWithheld: true } : opened;
  }

  /** `doc`'s content fields sealed under the approval's id (an approval, or `{ decision }`). */
  async #sealed<T extends object>(id: string, conversationId: string, doc: T): Promise<T> {
    let sealed = doc;
    for (const [field, kind] of SEALED) {
      const value = fieldValue(doc, field);
      if (value === undefined) continue;
      const ref = { collection: COLLECTIONS.approvals, id, field };
      sealed = withFieldValue(
        sealed,
        field,
        kind === "text" ? await this.#cipher.sealText(conversationId, ref, String(value)) : await this.#cipher.sealJson(conversationId, ref, value),
      );
    }
    return sealed;
  }

  async setup(): Promise<void> {
    await this.collection.createIndex({ conversationId: 1, createdAt: 1 }, { name: "conversation_approvals" });
    await this.collection.createIndex({ turnId: 1 }, { name: "turn_approvals" });
    await this.collection.createIndex({ status: 1, deadline: 1 }, { name: "pending_deadline" });
  }

  /** Records the calls a turn waits on; a retried turn writes nothing new, so a decision already taken stands. */
  async open(approvals: readonly ApprovalDocument[], fence: WriteFence): Promise<void> {
    for (const { argsWithheld: _withheld, ...approval } of approvals) {
      // The resume job keeps no question: the turn's sealed origin has it (`resumeJobOf`).
      const { content: _question, ...origin } = approval.origin ?? {};
      const sealed = await this.#sealed(approval._id, approval.conversationId, approval);
      await fence.insertOnce(this.collection, { ...sealed, ...(approval.origin && { origin }) });
    }
  }

  async get(approvalId: string): Promise<ApprovalDocument | null> {
    return this.#opened(await this.collection.findOne({ _id: approvalId }));
  }

  /** The conversation's latest `limit` approvals (so the newest are never cut off), oldest first, optionally of one status. */
  async listByConversation(conversationId: string, options: { status?: ApprovalStatus; limit: number }): Promise<ApprovalDocument[]> {
    const filter: Filter<ApprovalDocument> = { conversationId, ...(options.status ? { status: options.status } : {}) };
    const latest = await this.collection.find(filter).sort({ createdAt: -1, _id: -1 }).limit(options.limit).toArray();
    return Promise.all(latest.reverse().map((doc) => this.#opened(doc)));
  }

  async listByTurn(turnId: string): Promise<ApprovalDocument[]> {
    const docs = await this.collection.find({ turnId }).sort({ createdAt: 1, _id: 1 }).toArray();
    return Promise.all(docs.map((doc) => this.#opened(doc)));
  }

  /**
   * Takes a person's decision on a pending approval before its deadline. Returns the approval and
   * whether this call decided it (false: the same decision was taken before). An overdue one is
   * refused and left pending: the caller expires it once its turn is handed on.
   */
  async decide(approvalId: string, choice: ApprovalChoice, by: Principal, now = new Date()): Promise<{ approval: ApprovalDocument; decided: boolean }> {
    const status = STATUS_OF[choice.kind];
    const decision: ApprovalDecision = { ...choice, by, at: now, ...(choice.kind === "edit" && { argsHash: argsHash(choice.args) }) };
    const stored = await this.collection.findOne({ _id: approvalId }, { projection: { conversationId: 1, args: 1 } });
    if (!stored) throw new NotFoundError(`approval ${approvalId} not found`);
    // A store that cannot seal (a webhook) in a deployment that seals keeps no edited arguments: its caller hands them
    // to the worker, which stores them sealed (`recordEdit`); the decision names them by `argsHash` meanwhile.
    const handOver = decision.kind === "edit" && !this.#cipher.enabled && isCiphertext(stored.args);
    const { args: _handedOver, ...named } = decision as ApprovalChoice & { args?: unknown };
    const updated = await this.collection.findOneAndUpdate(
      { _id: approvalId, status: "pending", deadline: { $gt: now } },
      { $set: { status, decision: handOver ? (named as ApprovalDecision) : (await this.#sealed(approvalId, stored.conversationId, { decision })).decision } },
      { returnDocument: "after" },
    );
    if (updated) return { approval: await this.#opened(updated), decided: true };
    const existing = await this.get(approvalId);
    if (!existing) throw new NotFoundError(`approval ${approvalId} not found`);
    if (existing.status === status && sameChoice(existing.decision, decision)) return { approval: existing, decided: false };
    // Still pending here means past its deadline: the caller resumes its turn, then marks it (`Approvals`).
    throw closedApprovalError(existing);
  }

  /**
   * The edited arguments a webhook handed over (`decide` there kept none), stored sealed when they
   * are the ones its decision names (`argsHash`); returns whether they were stored.
   */
  async recordEdit(approvalId: string, args: Record<string, unknown>): Promise<boolean> {
    const doc = await this.collection.findOne({ _id: approvalId });
    const named = doc?.decision?.kind === "edit" && doc.decision.args === undefined ? doc.decision.argsHash : undefined;
    if (!doc || named === undefined || named !== argsHash(args)) return false;
    const { decision } = await this.#sealed(approvalId, doc.conversationId, { decision: { args } });
    const result = await this.collection.updateOne(
      { _id: approvalId, "decision.argsHash": named, "decision.args": { $exists: false } },
      { $set: { "decision.args": decision.args } },
    );
    return result.modifiedCount === 1;
  }

  /** Pending approvals past their deadline, most overdue first, at most `limit` (index `pending_deadline`): their ids and turns. */
  async overdue(now: Date, limit: number): Promise<Pick<ApprovalDocument, "_id" | "turnId">[]> {
    return this.collection
      .find({ status: "pending", deadline: { $lte: now } }, { projection: { _id: 1, turnId: 1 } })
      .sort({ deadline: 1 })
      .limit(limit)
      .toArray();
  }

  /** Rejects as expired the pending approvals past their deadline among `filter`'s; returns how many. */
  async expireDue(filter: Pick<Filter<ApprovalDocument>, "_id" | "turnId" | "conversationId">, now = new Date()): Promise<number> {
    const decision: ApprovalDecision = { kind: "expire", at: now };
    const result = await this.collection.updateMany({ ...filter, status: "pending", deadline: { $lte: now } }, { $set: { status: "expired", decision } });
    return result.modifiedCount;
  }

  /**
   * The conversation moved on (a newer turn began): approvals of its other turns still pending never
   * run, nor do the approved or edited calls of `unresumed` turns (waiting to resume when it began);
   * a decision taken stays on the record.
   */
  async supersedeOthers(conversationId: string, turnId: string, unresumed: readonly string[] = []): Promise<number> {
    const result = await this.collection.updateMany(
      {
        conversationId,
        turnId: { $ne: turnId },
        $or: [{ status: "pending" }, { turnId: { $in: [...unresumed] }, status: { $in: ["approved", "edited"] } }],
      },
      { $set: { status: "superseded" } },
    );
    return result.modifiedCount;
  }

  /** Claims the one notice of a turn's waiting calls: true for one caller only. */
  async claimNotice(turnId: string, now = new Date()): Promise<boolean> {
    const result = await this.collection.updateMany({ turnId, status: "pending", noticeAt: { $exists: false } }, { $set: { noticeAt: now } });
    return result.modifiedCount > 0;
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await this.collection.deleteMany({ conversationId });
  }
}

function sameChoice(a: ApprovalDecision | undefined, b: ApprovalDecision): boolean {
  if (!a || a.kind !== b.kind) return false;
  return a.kind !== "edit" || (b.kind === "edit" && a.argsHash === b.argsHash);
}
