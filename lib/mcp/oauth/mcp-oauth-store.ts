import { createHash } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { OAuthClientInformationMixed } from "@modelcontextprotocol/sdk/shared/auth.js";
import { ownerKey, type Principal } from "../../auth/principal.js";
import { COLLECTIONS } from "../../store/collections.js";
import type { Sealed } from "./envelope-cipher.js";
import type { PendingSignIn } from "./mcp-oauth-types.js";

/** A user's tokens for one server of one tenant's entry, sealed; `retainUntil` is the inactivity expiry (TTL). */
interface TokenDocument {
  _id: string;
  issuer: Principal["issuer"];
  tenant: string | null;
  subject: string;
  server: string;
  /** The server's URL (the resource) the tokens were issued for. */
  url: string;
  /** The tenant whose entry it is. */
  entryTenant: string | null;
  sealed: Sealed;
  /** When the access token expires, as the authorization server said (`expires_in`); null when it did not say. */
  accessExpiresAt: Date | null;
  updatedAt: Date;
  retainUntil: Date;
}

interface PendingDocument extends PendingSignIn {
  /** The SHA-256 of the sign-in's `state`: the state itself is only in the link the user was given. */
  _id: string;
  createdAt: Date;
}

/**
 * Tokens of a finished sign-in waiting for the user who started it to confirm (docs/mcp-oauth.md,
 * "Whose sign-in"): in the sign-ins collection, so its TTL and `deleteAllOf` cover them.
 */
export interface HeldSignIn {
  principal: Principal;
  tenant: string | null;
  server: PendingSignIn["server"];
  /** The tokens, sealed with the held key as associated data. */
  sealed: Sealed;
  /** SHA-256 of the confirmation code shown to whoever finished the sign-in in the browser. */
  codeHash: string;
  /** Wrong codes given so far; the held sign-in is dropped at `MAX_CONFIRM_ATTEMPTS`. */
  attempts: number;
  expiresAt: Date;
}

interface HeldDocument extends HeldSignIn {
  _id: string;
}

interface ClientDocument {
  _id: string;
  info: OAuthClientInformationMixed;
  createdAt: Date;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * The one key of a user's tokens for a server: issuer, tenant and subject of the principal, the
 * tenant whose entry it is, the server's name and its URL (the resource the tokens were issued
 * for). It is also the associated data the tokens are sealed with, so tokens copied under another
 * key do not decrypt, and an entry re-pointed at another URL never sends the tokens of the first.
 */
export function tokenKey(principal: Principal, tenant: string | null, server: string, url: string): string {
  return JSON.stringify([ownerKey(principal), tenant, server, url]);
}

/**
 * Per-user MCP OAuth state in MongoDB: sealed tokens (`mcp_oauth_tokens`), pending sign-ins bound
 * to their state (`mcp_oauth_sign_ins`, single use, TTL), and clients registered dynamically with
 * an authorization server (`mcp_oauth_clients`, per tenant and server, not per user).
 */
export class McpOAuthStore {
  readonly #tokens: Collection<TokenDocument>;
  readonly #pending: Collection<PendingDocument>;
  readonly #held: Collection<HeldDocument>;
  readonly #clients: Collection<ClientDocument>;

  constructor(db: Db) {
    this.#tokens = db.collection(COLLECTIONS.mcpOAuthTokens);
    this.#pending = db.collection(COLLECTIONS.mcpOAuthSignIns);
    this.#held = db.collection(COLLECTIONS.mcpOAuthSignIns);
    this.#clients = db.collection(COLLECTIONS.mcpOAuthClients);
  }

  async setup(): Promise<void> {
    await Promise.all([
      this.#tokens.createIndex({ retainUntil: 1 }, { expireAfterSeconds: 0 }),
      this.#tokens.createIndex({ issuer: 1, tenant: 1, subject: 1 }),
      this.#pending.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 }),
    ]);
  }

  async loadTokens(key: string): Promise<TokenDocument | null> {
    return this.#tokens.findOne({ _id: sha256(key) });
  }

  async saveTokens(key: string, doc: Omit<TokenDocument, "_id">): Promise<void> {
    await this.#tokens.replaceOne({ _id: sha256(key) }, doc, { upsert: true });
  }

  /** Pushes the inactivity expiry of tokens in use forward, at most once per half period (as the conversations' retention does). */
  async touchTokens(key: string, retainUntil: Date, halfPeriodMs: number): Promise<void> {
    await this.#tokens.updateOne({ _id: sha256(key), retainUntil: { $lt: new Date(retainUntil.getTime() - halfPeriodMs) } }, { $set: { retainUntil } });
  }

  async deleteTokens(key: string): Promise<boolean> {
    return (await this.#tokens.deleteOne({ _id: sha256(key) })).deletedCount === 1;
  }

  /** A principal's tokens for one server of one tenant's entry, whatever URL they were issued for. Returns how many went. */
  async deleteServerTokens(principal: Principal, entryTenant: string | null, server: string): Promise<number> {
    const who = { issuer: principal.issuer, tenant: principal.tenant, subject: principal.subject };
    return (await this.#tokens.deleteMany({ ...who, entryTenant, server })).deletedCount;
  }

  /** Every token and pending sign-in of one principal, whatever the server: the user's data deleted. Returns how many tokens went. */
  async deleteAllOf(principal: Principal): Promise<number> {
    const who = { issuer: principal.issuer, tenant: principal.tenant, subject: principal.subject };
    const [tokens] = await Promise.all([
      this.#tokens.deleteMany(who),
      this.#pending.deleteMany({ "principal.issuer": who.issuer, "principal.tenant": who.tenant, "principal.subject": who.subject }),
    ]);
    return tokens.deletedCount;
  }

  async savePending(state: string, pending: PendingSignIn, now: Date): Promise<void> {
    await this.#pending.insertOne({ _id: sha256(state), ...pending, createdAt: now });
  }

  /** The pending sign-in of this state, removed as it is read: a state finishes at most one sign-in. */
  async takePending(state: string): Promise<PendingSignIn | null> {
    const _id = sha256(state);
    const doc = await this.#pending.findOne({ _id });
    // Whoever deletes it takes it: of two callbacks racing with one state, only one sees deletedCount 1.
    if (!doc || (await this.#pending.deleteOne({ _id })).deletedCount !== 1) return null;
    const { _id: _, createdAt, ...pending } = doc;
    return pending;
  }

  /** Holds a finished sign-in's tokens for confirmation, replacing an earlier one of the same key (a newer sign-in wins). */
  async saveHeld(key: string, held: HeldSignIn): Promise<void> {
    await this.#held.replaceOne({ _id: sha256(`held:${key}`) }, held, { upsert: true });
  }

  async loadHeld(key: string): Promise<HeldSignIn | null> {
    return this.#held.findOne({ _id: sha256(`held:${key}`) });
  }

  /** The held sign-in of this key whose code hash is `codeHash`, removed as it is read (a code confirms once). */
  async takeHeld(key: string, codeHash: string): Promise<HeldSignIn | null> {
    const filter = { _id: sha256(`held:${key}`), codeHash };
    const doc = await this.#held.findOne(filter);
    // Whoever deletes it takes it, as `takePending`.
    if (!doc || (await this.#held.deleteOne(filter)).deletedCount !== 1) return null;
    return doc;
  }

  /** Counts a wrong code; at `max` the held sign-in is deleted. */
  async failHeld(key: string, max: number): Promise<void> {
    const _id = sha256(`held:${key}`);
    const after = await this.#held.findOneAndUpdate({ _id }, { $inc: { attempts: 1 } }, { returnDocument: "after" });
    if (after && after.attempts >= max) await this.#held.deleteOne({ _id });
  }

  async loadClient(tenant: string | null, server: string, url: string): Promise<OAuthClientInformationMixed | undefined> {
    return (await this.#clients.findOne({ _id: sha256(JSON.stringify([tenant, server, url])) }))?.info;
  }

  async saveClient(tenant: string | null, server: string, url: string, info: OAuthClientInformationMixed, now: Date): Promise<void> {
    await this.#clients.replaceOne({ _id: sha256(JSON.stringify([tenant, server, url])) }, { info, createdAt: now }, { upsert: true });
  }

  async deleteClient(tenant: string | null, server: string, url: string): Promise<void> {
    await this.#clients.deleteOne({ _id: sha256(JSON.stringify([tenant, server, url])) });
  }
}
