import { createHash, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { CREDENTIAL_SECRET_NAMES, CREDENTIAL_SECRETS, secretOf, type CredentialKey, type CredentialSecretName } from "../../../lib/config/credentials.js";

/**
 * Local stand-ins for the two AWS JSON APIs the handlers call besides Bedrock: Secrets Manager
 * GetSecretValue (awsJson1_1) and SQS SendMessage / ChangeMessageVisibility (awsJson1_0). The
 * real SDK clients reach them through AWS_ENDPOINT_URL_SECRETS_MANAGER and AWS_ENDPOINT_URL_SQS,
 * so everything up to the HTTP request is the code that runs in Lambda. It holds one secret per
 * credentials secret of the stack (`CREDENTIAL_SECRETS`).
 */

/** The characters SQS takes in a message body (SendMessage's documentation); it refuses any other with InvalidMessageContents. */
export const OUTSIDE_SQS_CHARACTERS = /[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

export const TEST_ACCOUNT = "123456789012";
export const TEST_REGION = "us-east-1";

export interface SentMessage {
  messageId: string;
  queueUrl: string;
  body: string;
  groupId: string;
  deduplicationId: string;
  sequenceNumber: string;
  /** String message attributes, by name (`MessageAttributes`); none when unset. */
  attributes?: Record<string, string>;
  /** The `AWSTraceHeader` system attribute, when the sender set one. */
  traceHeader?: string;
}

export interface LocalAws {
  url: string;
  queueUrl: string;
  secretArns: Record<CredentialSecretName, string>;
  sent: SentMessage[];
  visibilityChanges: { receiptHandle: string; visibilityTimeout: number }[];
  /** GetSecretValue calls served, by secret. */
  secretFetches: Record<CredentialSecretName, number>;
  /** Variables that point the SDK here, with dummy credentials, and name every secret and the queue. */
  environment: Record<string, string>;
  /** Each key into its own secret, every other key of each secret left empty, as a filled-in template. */
  setCredentials(keys: Partial<Record<CredentialKey, string>>): void;
  /** One secret's string exactly as given (for secrets that are not JSON). */
  setSecretString(name: CredentialSecretName, value: string): void;
  /** Answers GetSecretValue for the secret with this error (as Secrets Manager does for a secret without a value, or a denied key) until cleared. */
  failSecret(name: CredentialSecretName, error: { type: string; message: string } | undefined): void;
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (c: Buffer) => chunks.push(c));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function reply(response: ServerResponse, status: number, body: unknown, contentType: string): void {
  response.writeHead(status, { "content-type": contentType, "x-amzn-requestid": randomUUID() });
  response.end(JSON.stringify(body));
}

export async function startLocalAws(): Promise<LocalAws> {
  const secretArns = Object.fromEntries(
    CREDENTIAL_SECRET_NAMES.map((name, i) => [
      name,
      `arn:aws:secretsmanager:${TEST_REGION}:${TEST_ACCOUNT}:secret:test/threadwise/${CREDENTIAL_SECRETS[name].name}-AbC12${i}`,
    ]),
  ) as Record<CredentialSecretName, string>;
  const secrets = new Map<string, string>(CREDENTIAL_SECRET_NAMES.map((name) => [secretArns[name], "{}"]));
  const secretFetches = Object.fromEntries(CREDENTIAL_SECRET_NAMES.map((name) => [name, 0])) as Record<CredentialSecretName, number>;
  const secretErrors = new Map<CredentialSecretName, { type: string; message: string }>();
  const sent: SentMessage[] = [];
  const visibilityChanges: LocalAws["visibilityChanges"] = [];
  let sequence = 0;

  const server: Server = createServer(async (request, response) => {
    const target = String(request.headers["x-amz-target"] ?? "");
    const body = JSON.parse((await readBody(request)) || "{}") as Record<string, unknown>;
    if (!String(request.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 ")) {
      return reply(response, 403, { __type: "MissingAuthenticationToken", message: "unsigned" }, "application/x-amz-json-1.1");
    }
    if (target === "secretsmanager.GetSecretValue") {
      const arn = String(body.SecretId);
      const name = CREDENTIAL_SECRET_NAMES.find((n) => secretArns[n] === arn);
      if (!name) {
        return reply(
          response,
          400,
          { __type: "ResourceNotFoundException", message: "Secrets Manager can't find the specified secret." },
          "application/x-amz-json-1.1",
        );
      }
      secretFetches[name] += 1;
      const failure = secretErrors.get(name);
      if (failure) return reply(response, 400, { __type: failure.type, message: failure.message }, "application/x-amz-json-1.1");
      const secretName = `test/threadwise/${CREDENTIAL_SECRETS[name].name}`;
      return reply(
        response,
        200,
        { ARN: arn, Name: secretName, SecretString: secrets.get(arn), VersionId: randomUUID(), CreatedDate: Date.now() / 1000 },
        "application/x-amz-json-1.1",
      );
    }
    if (target === "AmazonSQS.SendMessage") {
      if (OUTSIDE_SQS_CHARACTERS.test(String(body.MessageBody))) {
        return reply(response, 400, { __type: "com.amazonaws.sqs#InvalidMessageContents", message: "Invalid characters found." }, "application/x-amz-json-1.0");
      }
      const message: SentMessage = {
        messageId: randomUUID(),
        queueUrl: String(body.QueueUrl),
        body: String(body.MessageBody),
        groupId: String(body.MessageGroupId),
        deduplicationId: String(body.MessageDeduplicationId),
        sequenceNumber: String(++sequence).padStart(20, "0"),
        attributes: Object.fromEntries(
          Object.entries((body.MessageAttributes ?? {}) as Record<string, { StringValue?: string }>).map(([name, value]) => [name, String(value.StringValue)]),
        ),
        traceHeader: (body.MessageSystemAttributes as { AWSTraceHeader?: { StringValue?: string } } | undefined)?.AWSTraceHeader?.StringValue,
      };
      sent.push(message);
      const md5 = createHash("md5").update(message.body).digest("hex");
      return reply(
        response,
        200,
        { MessageId: message.messageId, MD5OfMessageBody: md5, SequenceNumber: message.sequenceNumber },
        "application/x-amz-json-1.0",
      );
    }
    if (target === "AmazonSQS.ChangeMessageVisibility") {
      visibilityChanges.push({ receiptHandle: String(body.ReceiptHandle), visibilityTimeout: Number(body.VisibilityTimeout) });
      return reply(response, 200, {}, "application/x-amz-json-1.0");
    }
    reply(response, 400, { __type: "UnknownOperationException", message: target }, "application/x-amz-json-1.0");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const queueUrl = `${url}/${TEST_ACCOUNT}/test-threadwise-turns.fifo`;
  return {
    url,
    queueUrl,
    secretArns,
    sent,
    visibilityChanges,
    secretFetches,
    environment: {
      AWS_REGION: TEST_REGION,
      AWS_ACCESS_KEY_ID: "AKIDLOCALTEST",
      AWS_SECRET_ACCESS_KEY: "local-test-secret",
      AWS_ENDPOINT_URL_SECRETS_MANAGER: url,
      AWS_ENDPOINT_URL_SQS: url,
      ...Object.fromEntries(CREDENTIAL_SECRET_NAMES.map((name) => [CREDENTIAL_SECRETS[name].variable, secretArns[name]])),
      TURN_QUEUE_URL: queueUrl,
    },
    setCredentials(keys) {
      for (const name of CREDENTIAL_SECRET_NAMES) {
        const value = Object.fromEntries(CREDENTIAL_SECRETS[name].keys.map((key) => [key, ""]));
        for (const [key, v] of Object.entries(keys)) if (secretOf(key as CredentialKey) === name) value[key] = v;
        secrets.set(secretArns[name], JSON.stringify(value));
      }
    },
    setSecretString(name, value) {
      secrets.set(secretArns[name], value);
    },
    failSecret(name, error) {
      if (error) secretErrors.set(name, error);
      else secretErrors.delete(name);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
