import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { apiEvent } from "../../functions/support/events.js";
import type { FunctionProcess } from "./lambda-runtime.js";

export interface HttpApi {
  url: string;
  close(): Promise<void>;
}

/**
 * The HTTP API (API Gateway, payload format 2.0) in front of a buffered function, for an HTTP
 * client such as the MCP SDK's `StreamableHTTPClientTransport`: each request becomes the event
 * `apiEvent` shapes (route key `METHOD /path`), and the function's `{statusCode, headers, body}`
 * the HTTP response. Standing in for the JWT authorizer, a request with a bearer token carries
 * `claims` and one without is answered 401 before the function runs, as API Gateway answers it.
 */
export async function startHttpApi(container: () => Promise<FunctionProcess>, claims: Record<string, string>): Promise<HttpApi> {
  const server = createServer((req, res) => {
    serve(req)
      .then(({ statusCode, headers, body }) => res.writeHead(statusCode, headers).end(body))
      .catch((error: unknown) => res.writeHead(502, { "content-type": "application/json" }).end(JSON.stringify({ message: String(error) })));
  });

  async function serve(req: IncomingMessage): Promise<{ statusCode: number; headers: Record<string, string>; body: Buffer }> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(",") : value;
    if (!headers.authorization?.startsWith("Bearer "))
      return { statusCode: 401, headers: { "content-type": "application/json" }, body: Buffer.from('{"message":"Unauthorized"}') };
    const body = Buffer.concat(chunks).toString("utf8");
    const event = apiEvent({
      method: req.method ?? "GET",
      path: url.pathname,
      routeKey: `${req.method} ${url.pathname}`,
      claims,
      headers,
      ...(body ? { body } : {}),
      ...(url.search ? { query: Object.fromEntries(url.searchParams) } : {}),
    });
    const result = await (await container()).invoke<{ statusCode: number; headers?: Record<string, string>; body?: string; isBase64Encoded?: boolean }>(event);
    const text = result.body ?? "";
    return { statusCode: result.statusCode, headers: result.headers ?? {}, body: Buffer.from(text, result.isBase64Encoded ? "base64" : "utf8") };
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
