import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * KMS at its HTTP boundary (the JSON 1.1 protocol): GenerateDataKey and Decrypt under one key,
 * refusing a blob of another key. The SDK's `KMSClient` reaches it through `endpoint`, or through
 * `AWS_ENDPOINT_URL_KMS` (`environment`) as a Lambda's client would.
 */
export interface KmsEndpoint {
  url: string;
  environment: { AWS_ENDPOINT_URL_KMS: string };
  /** Each call as `<target> <KeyId> [KeySpec]`, in order. */
  targets: string[];
  close(): Promise<void>;
}

export async function startKmsEndpoint(): Promise<KmsEndpoint> {
  const keys = new Map<string, { keyId: string; plaintext: Buffer }>();
  const targets: string[] = [];
  const server = createServer((req, res) => {
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
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    environment: { AWS_ENDPOINT_URL_KMS: url },
    targets,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
