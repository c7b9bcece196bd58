import type { IncomingMessage, ServerResponse } from "node:http";
import { lowercaseHeaders, pipeResponseStream, type HttpRequest, type HttpResponse } from "../api/http.js";
import { MAX_BODY_BYTES } from "../api/request-parsing.js";

/** Reads a node:http request into the router's shape; bodies far over the limit are cut (the router answers 413). */
export async function toHttpRequest(req: IncomingMessage): Promise<HttpRequest> {
  // Prefixing the origin keeps a path such as "//x" a path instead of a host.
  const url = new URL(`http://localhost${req.url?.startsWith("/") ? req.url : "/"}`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    // Keep just past the limit so the router sees the size and answers 413.
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    size += chunk.length;
  }
  return {
    method: req.method ?? "GET",
    path: url.pathname,
    headers: lowercaseHeaders(req.headers),
    query: Object.fromEntries(url.searchParams),
    body: chunks.length ? Buffer.concat(chunks).toString("utf8") : undefined,
    canStream: true,
  };
}

/** Writes the response; a streamed one piece by piece as it comes, until it ends or the client goes away. */
export async function writeHttpResponse(res: ServerResponse, response: HttpResponse): Promise<void> {
  if (!response.stream) {
    res.writeHead(response.status, response.headers);
    res.end(response.body);
    return;
  }
  const gone = new AbortController();
  res.once("close", () => gone.abort());
  res.writeHead(response.status, response.headers);
  res.flushHeaders();
  await pipeResponseStream(res, response.stream, gone.signal);
  res.end();
}
