import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MultiKeyringNode } from "@aws-crypto/material-management-node";
import { RawAesKeyringNode, RawAesWrappingSuiteIdentifier } from "@aws-crypto/raw-aes-keyring-node";
import { type ShredReceipt, type TenantCurrentKey, type TenantKeyrings, type TenantKeys, type TenantRef, tenantKey } from "./tenant-keys.js";

/** The folder of tenants' key files, in the local server's directory (`.local/`, git-ignored). */
export const LOCAL_CONTENT_KEYS_DIR = "content-keys";
/** The raw AES keyrings' namespace: the provider id each encrypted data key names. */
export const LOCAL_KEY_NAMESPACE = "threadwise-content";

interface KeyFile {
  issuer: TenantRef["issuer"];
  tenant: string | null;
  /** Oldest first; the last encrypts. */
  keys: { name: string; key: string; createdAt: string }[];
}

/**
 * Local mode's key hierarchy: one file per tenant under `.local/content-keys/` (mode 0600), made on
 * first use, holding the tenant's 256-bit wrapping keys (raw AES keyrings, AES-256-GCM). Rotation
 * appends a key; shredding deletes the file, so only a copy of `.local/` could bring it back.
 */
export class LocalTenantKeys implements TenantKeys {
  readonly kind = "local" as const;
  readonly #dir: string;

  constructor(localDir: string) {
    this.#dir = join(localDir, LOCAL_CONTENT_KEYS_DIR);
  }

  async keyrings(tenant: TenantRef): Promise<TenantKeyrings> {
    const file = (await this.#read(tenant)) ?? (await this.#create(tenant, new Date()));
    const rings = file.keys.map(
      (k) =>
        new RawAesKeyringNode({
          keyNamespace: LOCAL_KEY_NAMESPACE,
          keyName: k.name,
          // An isolated copy: the SDK refuses a key that shares its memory (a pooled Buffer).
          unencryptedMasterKey: Uint8Array.from(Buffer.from(k.key, "base64")),
          wrappingSuite: RawAesWrappingSuiteIdentifier.AES256_GCM_IV12_TAG16_NO_PADDING,
        }),
    );
    const current = rings[rings.length - 1];
    return { encrypt: current, decrypt: new MultiKeyringNode({ children: rings }), current: file.keys[file.keys.length - 1].name };
  }

  async rotate(tenant: TenantRef, now = new Date()): Promise<{ keyId: string; rotatedAt: Date }> {
    const file = (await this.#read(tenant)) ?? (await this.#create(tenant, now));
    const key = newKey(now);
    await this.#write(tenant, { ...file, keys: [...file.keys, key] });
    return { keyId: key.name, rotatedAt: now };
  }

  async currentKeys(): Promise<TenantCurrentKey[]> {
    const names = await readdir(this.#dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return [] as string[];
      throw error;
    });
    const out: TenantCurrentKey[] = [];
    for (const name of names.filter((n) => n.endsWith(".json"))) {
      const file = JSON.parse(await readFile(join(this.#dir, name), "utf8")) as KeyFile;
      const current = file.keys.at(-1);
      if (current) out.push({ tenant: { issuer: file.issuer, tenant: file.tenant }, keyId: current.name, createdAt: new Date(current.createdAt) });
    }
    return out;
  }

  async shred(tenant: TenantRef, now = new Date()): Promise<ShredReceipt> {
    const file = await this.#read(tenant);
    await rm(this.#path(tenant), { force: true });
    return { ...tenant, keySource: "local", keys: file?.keys.map((k) => k.name) ?? [], shreddedAt: now, finalAt: now };
  }

  #path(tenant: TenantRef): string {
    return join(this.#dir, `${createHash("sha256").update(tenantKey(tenant)).digest("hex").slice(0, 32)}.json`);
  }

  async #read(tenant: TenantRef): Promise<KeyFile | undefined> {
    try {
      return JSON.parse(await readFile(this.#path(tenant), "utf8")) as KeyFile;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async #create(tenant: TenantRef, now: Date): Promise<KeyFile> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const file: KeyFile = { issuer: tenant.issuer, tenant: tenant.tenant, keys: [newKey(now)] };
    // "wx": two processes making a tenant's first key at once never overwrite each other's; the loser reads the winner's.
    await writeFile(this.#path(tenant), JSON.stringify(file), { mode: 0o600, flag: "wx" }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
    return (await this.#read(tenant)) as KeyFile;
  }

  async #write(tenant: TenantRef, file: KeyFile): Promise<void> {
    const path = this.#path(tenant);
    const temporary = `${path}.${randomBytes(4).toString("hex")}.tmp`;
    await writeFile(temporary, JSON.stringify(file), { mode: 0o600 });
    await rename(temporary, path);
  }
}

function newKey(now: Date): KeyFile["keys"][number] {
  return { name: `${now.toISOString()}/${randomBytes(4).toString("hex")}`, key: randomBytes(32).toString("base64"), createdAt: now.toISOString() };
}
