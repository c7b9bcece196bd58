import { randomUUID } from "node:crypto";
import type { Context, SQSEvent, SQSRecord } from "aws-lambda";
import type { HttpApiEvent } from "../../../functions/shared/http-event.js";
import { TEST_ACCOUNT, TEST_REGION, type SentMessage } from "./aws-endpoints.js";

/** Claims as API Gateway's JWT authorizer hands them over: strings, arrays flattened as "[a b]". */
export function jwtClaims(sub: string, extra: Record<string, string> = {}): Record<string, string> {
  const now = Math.floor(Date.now() / 1000);
  return { sub, iss: "https://issuer.test/", aud: "threadwise", iat: String(now), exp: String(now + 3600), ...extra };
}

export interface ApiEventInput {
  method: string;
  /** The path as sent, e.g. `/v1/conversations/abc/messages`. */
  path: string;
  /** The route that matched, e.g. `POST /v1/conversations/{id}/messages`. */
  routeKey: string;
  claims?: Record<string, string>;
  body?: unknown;
  base64?: boolean;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  /** API Gateway's id of the request. Default: a new UUID. */
  requestId?: string;
}

/** An API Gateway HTTP API (payload format 2.0) event, shaped as AWS sends it. */
export function apiEvent(input: ApiEventInput): HttpApiEvent {
  const text = input.body === undefined ? undefined : typeof input.body === "string" ? input.body : JSON.stringify(input.body);
  const rawQueryString = new URLSearchParams(input.query ?? {}).toString();
  const now = new Date();
  return {
    version: "2.0",
    routeKey: input.routeKey,
    rawPath: input.path,
    rawQueryString,
    headers: {
      accept: "application/json",
      "content-length": String(Buffer.byteLength(text ?? "")),
      ...(text !== undefined ? { "content-type": "application/json" } : {}),
      host: "abc123.execute-api.us-east-1.amazonaws.com",
      "user-agent": "vitest",
      "x-amzn-trace-id": `Root=1-${randomUUID().slice(0, 8)}`,
      "x-forwarded-for": "203.0.113.7",
      "x-forwarded-port": "443",
      "x-forwarded-proto": "https",
      ...(input.claims ? { authorization: "Bearer eyJhbGciOiJSUzI1NiJ9.verified-by-api-gateway.sig" } : {}),
      ...input.headers,
    },
    ...(input.query ? { queryStringParameters: input.query } : {}),
    requestContext: {
      accountId: TEST_ACCOUNT,
      apiId: "abc123",
      ...(input.claims ? { authorizer: { jwt: { claims: input.claims, scopes: null } } } : {}),
      domainName: "abc123.execute-api.us-east-1.amazonaws.com",
      domainPrefix: "abc123",
      http: { method: input.method, path: input.path, protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "vitest" },
      requestId: input.requestId ?? randomUUID(),
      routeKey: input.routeKey,
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(text !== undefined
      ? { body: input.base64 ? Buffer.from(text).toString("base64") : text, isBase64Encoded: Boolean(input.base64) }
      : { isBase64Encoded: false }),
  } as HttpApiEvent;
}

/** A request to a Function URL (`authType: NONE`): payload format 2.0 with routeKey `$default`, no authorizer, as Lambda maps it. */
export function functionUrlEvent(input: { method: string; path: string; headers?: Record<string, string>; body?: unknown }): HttpApiEvent {
  const text = input.body === undefined ? undefined : JSON.stringify(input.body);
  const now = new Date();
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: input.path,
    rawQueryString: "",
    headers: {
      "content-length": String(Buffer.byteLength(text ?? "")),
      ...(text !== undefined ? { "content-type": "application/json" } : {}),
      host: "urlid.lambda-url.us-east-1.on.aws",
      "user-agent": "vitest",
      "x-amzn-trace-id": `Root=1-${randomUUID().slice(0, 8)}`,
      "x-forwarded-for": "203.0.113.7",
      "x-forwarded-port": "443",
      "x-forwarded-proto": "https",
      ...input.headers,
    },
    requestContext: {
      accountId: "anonymous",
      apiId: "urlid",
      domainName: "urlid.lambda-url.us-east-1.on.aws",
      domainPrefix: "urlid",
      http: { method: input.method, path: input.path, protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "vitest" },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(text !== undefined ? { body: text } : {}),
    isBase64Encoded: false,
  } as HttpApiEvent;
}

/** The SQS event record Lambda builds from a message sent to the FIFO queue. */
export function sqsRecord(message: SentMessage, receiveCount = 1): SQSRecord {
  const now = String(Date.now());
  return {
    messageId: message.messageId,
    receiptHandle: `AQEB${randomUUID().replace(/-/g, "")}`,
    body: message.body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: now,
      SequenceNumber: message.sequenceNumber,
      MessageGroupId: message.groupId,
      SenderId: "AROAEXAMPLE:dev-threadwise-api",
      MessageDeduplicationId: message.deduplicationId,
      ApproximateFirstReceiveTimestamp: now,
      ...(message.traceHeader && { AWSTraceHeader: message.traceHeader }),
    },
    // As Lambda delivers them: each string attribute with its type and empty lists.
    messageAttributes: Object.fromEntries(
      Object.entries(message.attributes ?? {}).map(([name, stringValue]) => [
        name,
        { stringValue, dataType: "String", stringListValues: [], binaryListValues: [] },
      ]),
    ),
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: `arn:aws:sqs:${TEST_REGION}:${TEST_ACCOUNT}:test-threadwise-turns.fifo`,
    awsRegion: TEST_REGION,
  };
}

export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

/** The Lambda context object, as the runtime passes it. */
export function lambdaContext(functionName: string, timeoutMs = 29_000): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:${TEST_REGION}:${TEST_ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: "1024",
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "2026/11/30/[$LATEST]0123456789abcdef",
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
