import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * KMS at its HTTP boundary (JSON 1.1) with keys of its own: CreateKey, GenerateDataKey, Encrypt,
 * Decrypt and ScheduleKeyDeletion, as the AWS Encryption SDK's KMS keyring and `KmsTenantKeys`
 * call them through the real `@aws-sdk/client-kms`. A data key is wrapped with AES-GCM under the
 * named key's material and its encryption context, so Decrypt under another key or context fails
 * as KMS's does; a key scheduled for deletion refuses every use (`KMSInvalidStateException`).
 */
export interface KmsKeysEndpoint {
  url: string;
  /** Each call as `<operation> <KeyId>`, in order. */
  calls: string[];
  /** Each call's operation and JSON input as received (tags, encryption context), in order. */
  requests: { operation: string; input: Record<string, unknown> }[];
  /** Keys by ARN: scheduled for deletion or not. */
  keys: Map<string, { material: Buffer; pendingDeletion: boolean; tags: { TagKey: string; TagValue: string }[] }>;
  close(): Promise<void>;
}

const ACCOUNT = "111122223333";
const REGION = "us-east-1";

export interface KmsKeysEndpointOptions {
  /**
   * The first uses (GenerateDataKey, Encrypt, Decrypt) of each key made here refused with
   * `AccessDeniedException`, as KMS may refuse a key's tag-based grants until its tags reach
   * authorization (up to five minutes, "ABAC for AWS KMS"). Default: 0.
   */
  refusedFirstUses?: number;
}

export async function startKmsKeysEndpoint(options: KmsKeysEndpointOptions = {}): Promise<KmsKeysEndpoint> {
  const keys: KmsKeysEndpoint["keys"] = new Map();
  const refusals = new Map<string, number>();
  const calls: string[] = [];
  const requests: KmsKeysEndpoint["requests"] = [];
  const fail = (status: number, type: string, message: string) => ({ status, body: { __type: type, message } });
  const aad = (context: unknown) => Buffer.from(JSON.stringify(Object.entries((context ?? {}) as Record<string, string>).sort()), "utf8");
  const usable = (keyId: string) => {
    const key = keys.get(keyId);
    if (!key) return fail(400, "NotFoundException", `key ${keyId} does not exist`);
    if (key.pendingDeletion) return fail(400, "KMSInvalidStateException", `${keyId} is pending deletion`);
    const refused = refusals.get(keyId) ?? 0;
    if (refused > 0) {
      refusals.set(keyId, refused - 1);
      return fail(400, "AccessDeniedException", `not authorized to use ${keyId} (its tags have not reached authorization yet)`);
    }
    return key;
  };
  const wrap = (keyId: string, material: Buffer, plaintext: Buffer, context: unknown) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", material, iv);
    cipher.setAAD(aad(context));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const id = Buffer.from(keyId, "utf8");
    const head = Buffer.alloc(2);
    head.writeUInt16BE(id.length);
    return Buffer.concat([head, id, iv, cipher.getAuthTag(), body]).toString("base64");
  };
  const handle = (operation: string, input: Record<string, unknown>): { status: number; body: unknown } => {
    calls.push(`${operation} ${String(input.KeyId ?? "")}`.trim());
    requests.push({ operation, input });
    switch (operation) {
      case "CreateKey": {
        const arn = `arn:aws:kms:${REGION}:${ACCOUNT}:key/${randomUUID()}`;
        keys.set(arn, { material: randomBytes(32), pendingDeletion: false, tags: (input.Tags ?? []) as { TagKey: string; TagValue: string }[] });
        refusals.set(arn, options.refusedFirstUses ?? 0);
        return { status: 200, body: { KeyMetadata: { Arn: arn, KeyId: arn.split("/")[1], KeyState: "Enabled" } } };
      }
      case "GenerateDataKey":
      case "Encrypt": {
        const keyId = String(input.KeyId);
        const key = usable(keyId);
        if ("status" in key) return key;
        const plaintext = operation === "Encrypt" ? Buffer.from(String(input.Plaintext), "base64") : randomBytes(Number(input.NumberOfBytes ?? 32));
        const blob = wrap(keyId, key.material, plaintext, input.EncryptionContext);
        return {
          status: 200,
          body: { KeyId: keyId, CiphertextBlob: blob, ...(operation === "GenerateDataKey" && { Plaintext: plaintext.toString("base64") }) },
        };
      }
      case "Decrypt": {
        const blob = Buffer.from(String(input.CiphertextBlob), "base64");
        const idLength = blob.readUInt16BE(0);
        const keyId = blob.subarray(2, 2 + idLength).toString("utf8");
        if (input.KeyId !== undefined && input.KeyId !== keyId) return fail(400, "IncorrectKeyException", "the blob is of another key");
        const key = usable(keyId);
        if ("status" in key) return key;
        try {
          const rest = blob.subarray(2 + idLength);
          const decipher = createDecipheriv("aes-256-gcm", key.material, rest.subarray(0, 12));
          decipher.setAAD(aad(input.EncryptionContext));
          decipher.setAuthTag(rest.subarray(12, 28));
          const plaintext = Buffer.concat([decipher.update(rest.subarray(28)), decipher.final()]);
          return { status: 200, body: { KeyId: keyId, Plaintext: plaintext.toString("base64") } };
        } catch {
          return fail(400, "InvalidCiphertextException", "the blob or its encryption context does not match");
        }
      }
      case "ScheduleKeyDeletion": {
        const keyId = String(input.KeyId);
        const key = keys.get(keyId);
        if (!key) return fail(400, "NotFoundException", `key ${keyId} does not exist`);
        key.pendingDeletion = true;
        const days = Number(input.PendingWindowInDays ?? 30);
        return { status: 200, body: { KeyId: keyId, KeyState: "PendingDeletion", DeletionDate: Date.now() / 1000 + days * 86_400, PendingWindowInDays: days } };
      }
      default:
        return fail(400, "UnsupportedOperationException", `${operation} is not served here`);
    }
  };
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const operation = String(req.headers["x-amz-target"]).replace("TrentService.", "");
      const out = handle(operation, JSON.parse(body || "{}") as Record<string, unknown>);
      res.statusCode = out.status;
      res.setHeader("content-type", "application/x-amz-json-1.1");
      res.end(JSON.stringify(out.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    requests,
    keys,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
