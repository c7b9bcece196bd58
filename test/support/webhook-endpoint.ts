import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface WebhookEndpoint {
  url: string;
  requests: RecordedRequest[];
  /** Status codes answered by the next requests, in order; then 200. */
  respondWith(...statuses: number[]): void;
  /** Delay before each answer, so that racing calls overlap. */
  setDelayMs(ms: number): void;
  close(): Promise<void>;
}

/** A local HTTP webhook receiver that records every request it gets. */
export async function startWebhookEndpoint(): Promise<WebhookEndpoint> {
  const requests: RecordedRequest[] = [];
  const statuses: number[] = [];
  let delayMs = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      const status = statuses.shift() ?? 200;
      setTimeout(() => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify({ received: status < 300 }));
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/follow-ups`,
    requests,
    respondWith: (...s) => statuses.push(...s),
    setDelayMs: (ms) => {
      delayMs = ms;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
