import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { KMSClient } from "@aws-sdk/client-kms";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KmsDataKeySource } from "../../../lib/mcp/oauth/kms-data-key-source.js";

/** KMS at its HTTP boundary (the JSON 1.1 protocol): GenerateDataKey and Decrypt under one key, refusing a blob of another key. */
const keys = new Map<string, { keyId: string; plaintext: Buffer }>();
const targets: string[] = [];
const kms = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const target = String(req.headers["x-amz-target"]);
    const input = JSON.parse(body) as { KeyId?: string; KeySpec?: string; CiphertextBlob?: string };
    targets.push(`${target} ${input.KeyId} ${input.KeySpec ?? ""}`.trim());
    res.setHeader("content-type", "application/x-amz-json-1.1");
    if (target === "TrentService.GenerateDataKey") {
      const plaintext = randomBytes(32);
      const blob = randomBytes(48).toString("base64");
      keys.set(blob, { keyId: input.KeyId as string, plaintext });
      res.end(JSON.stringify({ KeyId: input.KeyId, Plaintext: plaintext.toString("base64"), CiphertextBlob: blob }));
      return;
    }
    const known = keys.get(input.CiphertextBlob as string);
    if (!known || known.keyId !== input.KeyId) {
      res.statusCode = 400;
      res.end(JSON.stringify({ __type: "InvalidCiphertextException", message: "no" }));
      return;
    }
    res.end(JSON.stringify({ KeyId: known.keyId, Plaintext: known.plaintext.toString("base64") }));
  });
});
let client: KMSClient;

beforeAll(async () => {
  await new Promise<void>((resolve) => kms.listen(0, "127.0.0.1", resolve));
  client = new KMSClient({
    endpoint: `http://127.0.0.1:${(kms.address() as AddressInfo).port}`,
    region: "us-east-1",
    credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" },
  });
});
afterAll(() => new Promise<void>((resolve) => kms.close(() => resolve())));

describe("KmsDataKeySource", () => {
  describe("decrypt", () => {
    it("returns the data key GenerateDataKey gave (AES_256 under the configured key), through KMS Decrypt", async () => {
      const source = new KmsDataKeySource(client, "alias/threadwise-mcp");
      const key = await source.generate();
      expect(key.plaintext).toHaveLength(32);
      expect(await source.decrypt(key.encrypted)).toEqual(key.plaintext);
      expect(targets.slice(-2)).toEqual(["TrentService.GenerateDataKey alias/threadwise-mcp AES_256", "TrentService.Decrypt alias/threadwise-mcp"]);
    });

    it("throws when KMS refuses the blob (a key of another KMS key)", async () => {
      const key = await new KmsDataKeySource(client, "alias/one").generate();
      await expect(new KmsDataKeySource(client, "alias/other").decrypt(key.encrypted)).rejects.toThrow(/no/);
    });
  });
});
