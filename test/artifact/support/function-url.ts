import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FunctionProcess } from "./lambda-runtime.js";

/** The content type of a response that starts with its status and headers (the runtime's `HttpResponseStream.from`). */
const HTTP_INTEGRATION_RESPONSE = "application/vnd.awslambda.http-integration-response";
/** The prelude ends with 8 NUL bytes; JSON never holds one. */
const PRELUDE_DELIMITER = Buffer.alloc(8);

export interface FunctionUrl {
  url: string;
  /** Settles when a response next closes before it ended: its client went away (or a function failing mid-stream cut it). Ask before. */
  nextClientGone(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A Function URL with `invokeMode: RESPONSE_STREAM` and `authType: NONE` in front of a function:
 * each HTTP request becomes a payload 2.0 event (`routeKey` `$default`, as Lambda maps it), and the
 * function's streamed response goes to the client chunk by chunk, its status and headers taken
 * from the prelude. A client that goes away stops only what it receives: the function runs on.
 */
export async function startFunctionUrl(container: () => Promise<FunctionProcess>): Promise<FunctionUrl> {
  const gone: (() => void)[] = [];
  const server = createServer((req, res) => {
    res.on("close", () => {
      if (!res.writableFinished) for (const settle of gone.splice(0)) settle();
    });
    serve(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" }).end(JSON.stringify({ Message: String(error) }));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const fn = await container();
    const streamed = await fn.invokeStreaming(functionUrlEvent(req, Buffer.concat(chunks).toString("utf8"), base));
    let pending: Buffer | undefined = streamed.contentType === HTTP_INTEGRATION_RESPONSE ? Buffer.alloc(0) : undefined;
    if (pending === undefined) res.writeHead(200, { "content-type": streamed.contentType }).flushHeaders();
    for await (const chunk of streamed.body) {
      if (pending !== undefined) {
        pending = Buffer.concat([pending, chunk]);
        const end = pending.indexOf(PRELUDE_DELIMITER);
        if (end < 0) continue;
        const prelude = JSON.parse(pending.subarray(0, end).toString("utf8")) as { statusCode?: number; headers?: Record<string, string> };
        res.writeHead(prelude.statusCode ?? 200, prelude.headers ?? {}).flushHeaders();
        const rest = pending.subarray(end + PRELUDE_DELIMITER.length);
        pending = undefined;
        if (rest.length > 0 && !res.destroyed) res.write(rest);
        continue;
      }
      if (!res.destroyed) res.write(chunk);
    }
    const trailers = await streamed.trailers;
    // A function that failed mid-stream: the client sees the connection cut, as a Function URL does.
    if (trailers["lambda-runtime-function-error-type"]) res.destroy();
    else res.end();
  }

  return {
    url: `${base}/`,
    nextClientGone: () => new Promise((resolve) => gone.push(resolve)),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A Function URL request event: API Gateway's payload format 2.0 with the fields a URL has. */
function functionUrlEvent(req: IncomingMessage, body: string, base: string) {
  const url = new URL(req.url ?? "/", base);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(",") : value;
  const now = new Date();
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: url.pathname,
    rawQueryString: url.searchParams.toString(),
    headers,
    ...(url.search ? { queryStringParameters: Object.fromEntries(url.searchParams) } : {}),
    requestContext: {
      accountId: "anonymous",
      apiId: "urlid",
      domainName: url.host,
      domainPrefix: "urlid",
      http: { method: req.method ?? "GET", path: url.pathname, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: headers["user-agent"] ?? "" },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    ...(body ? { body } : {}),
    isBase64Encoded: false,
  };
}
