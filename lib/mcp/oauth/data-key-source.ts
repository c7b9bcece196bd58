/** A fresh data key: the key itself, to encrypt with and forget, and the key encrypted by the key-encryption key, to store. */
export interface DataKey {
  plaintext: Buffer;
  encrypted: Buffer;
}

/**
 * Where envelope encryption's data keys come from (KMS in AWS, a local key file in local mode):
 * 32-byte keys for AES-256-GCM, and the one call that turns a stored encrypted key back into one.
 */
export interface DataKeySource {
  generate(): Promise<DataKey>;
  decrypt(encrypted: Buffer): Promise<Buffer>;
}
