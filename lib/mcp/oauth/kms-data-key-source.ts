import { DecryptCommand, GenerateDataKeyCommand, type KMSClient } from "@aws-sdk/client-kms";
import type { DataKey, DataKeySource } from "./data-key-source.js";

/** Data keys from AWS KMS (`GenerateDataKey`, AES_256), under one customer managed key; `Decrypt` names the key too. */
export class KmsDataKeySource implements DataKeySource {
  constructor(
    private readonly kms: KMSClient,
    private readonly keyId: string,
  ) {}

  async generate(): Promise<DataKey> {
    const out = await this.kms.send(new GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: "AES_256" }));
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error("KMS GenerateDataKey returned no key");
    return { plaintext: Buffer.from(out.Plaintext), encrypted: Buffer.from(out.CiphertextBlob) };
  }

  async decrypt(encrypted: Buffer): Promise<Buffer> {
    const out = await this.kms.send(new DecryptCommand({ KeyId: this.keyId, CiphertextBlob: encrypted }));
    if (!out.Plaintext) throw new Error("KMS Decrypt returned no key");
    return Buffer.from(out.Plaintext);
  }
}
