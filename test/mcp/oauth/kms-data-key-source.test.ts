import { KMSClient } from "@aws-sdk/client-kms";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KmsDataKeySource } from "../../../lib/mcp/oauth/kms-data-key-source.js";
import { startKmsEndpoint, type KmsEndpoint } from "../../support/kms-endpoint.js";

let kms: KmsEndpoint;
let targets: string[];
let client: KMSClient;

beforeAll(async () => {
  kms = await startKmsEndpoint();
  targets = kms.targets;
  client = new KMSClient({
    endpoint: kms.url,
    region: "us-east-1",
    credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" },
  });
});
afterAll(() => kms.close());

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
