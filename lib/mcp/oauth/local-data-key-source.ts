import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { DataKey, DataKeySource } from "./data-key-source.js";

/** The local key-encryption key's file, in the local server's directory (`.local/`, git-ignored). */
export const LOCAL_MCP_OAUTH_KEY_FILE = "mcp-oauth-key";

/**
 * Local mode's stand-in for KMS: a 32-byte key-encryption key in a file under `.local/`, made on
 * first use (mode 0600), that wraps each data key with AES-256-GCM as KMS would.
 */
export class LocalDataKeySource implements DataKeySource {
  #key: Promise<Buffer> | undefined;

  constructor(private readonly dir: string) {}

  async generate(): Promise<DataKey> {
    const plaintext = randomBytes(32);
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", await this.#keyEncryptionKey(), iv);
    const wrapped = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return { plaintext, encrypted: Buffer.concat([iv, cipher.getAuthTag(), wrapped]) };
  }

  async decrypt(encrypted: Buffer): Promise<Buffer> {
    const decipher = createDecipheriv("aes-256-gcm", await this.#keyEncryptionKey(), encrypted.subarray(0, 12));
    decipher.setAuthTag(encrypted.subarray(12, 28));
    return Buffer.concat([decipher.update(encrypted.subarray(28)), decipher.final()]);
  }

  #keyEncryptionKey(): Promise<Buffer> {
    this.#key ??= this.#load();
    return this.#key;
  }

  async #load(): Promise<Buffer> {
    const file = join(this.dir, LOCAL_MCP_OAUTH_KEY_FILE);
    try {
      const key = Buffer.from((await readFile(file, "utf8")).trim(), "base64");
      if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte key`);
      return key;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    const key = randomBytes(32);
    await mkdir(this.dir, { recursive: true });
    // "wx": two processes starting at once never overwrite each other's key; the loser reads the winner's.
    await writeFile(file, key.toString("base64"), { mode: 0o600, flag: "wx" }).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
    return Buffer.from((await readFile(file, "utf8")).trim(), "base64");
  }
}
