import { Binary } from "mongodb";
import { type ContentCipher, contentRefused, type FieldRef, isCiphertext, type StoredContent } from "./content-cipher.js";
import type { TenantRef } from "./tenant-keys.js";

/**
 * Contents stored clear (`CONTENT_ENCRYPTION=off`, and the stores of functions that carry no
 * Encryption SDK): values are written as they are, and a ciphertext met on read is refused
 * (`encryption_off`) rather than handed on as if it were content.
 */
export class ClearFieldCipher implements ContentCipher {
  readonly enabled = false;

  async sealText(_conversationId: string, _ref: FieldRef, text: string): Promise<StoredContent> {
    return text;
  }

  async openText(_conversationId: string, ref: FieldRef, stored: unknown): Promise<string> {
    return this.#clear<string>(ref, stored);
  }

  async sealJson<T>(_conversationId: string, _ref: FieldRef, value: T): Promise<T | Binary> {
    return value;
  }

  async openJson<T>(_conversationId: string, ref: FieldRef, stored: unknown): Promise<T> {
    return this.#clear<T>(ref, stored);
  }

  async sealBytes(_conversationId: string, _ref: FieldRef, bytes: Uint8Array): Promise<Uint8Array | Binary> {
    return bytes;
  }

  async openBytes(_conversationId: string, ref: FieldRef, stored: unknown): Promise<Uint8Array> {
    const bytes = this.#clear<Uint8Array | Binary>(ref, stored);
    return bytes instanceof Binary ? bytes.value() : bytes;
  }

  async sealJsonFor<T>(_tenant: TenantRef, _ref: FieldRef, value: T): Promise<T | Binary> {
    return value;
  }

  async openJsonFor<T>(_tenant: TenantRef, ref: FieldRef, stored: unknown): Promise<T> {
    return this.#clear<T>(ref, stored);
  }

  isSealed(stored: unknown): boolean {
    return isCiphertext(stored);
  }

  /** Nothing to re-seal: there are no keys. */
  async reseal(_conversationId: string, _ref: FieldRef, _stored: unknown): Promise<Binary | undefined> {
    return undefined;
  }

  async resealFor(_tenant: TenantRef, _ref: FieldRef, _stored: unknown): Promise<Binary | undefined> {
    return undefined;
  }

  sealedUnderOtherKey(_stored: unknown, _key: string): boolean {
    return false;
  }

  async currentKey(_tenant: TenantRef): Promise<string | undefined> {
    return undefined;
  }

  #clear<T>(ref: FieldRef, stored: unknown): T {
    if (isCiphertext(stored)) throw contentRefused("encryption_off", ref);
    return stored as T;
  }
}

/** Contents stored clear: what a store made without the database's cipher uses. */
export const CLEAR_FIELDS: ContentCipher = new ClearFieldCipher();
