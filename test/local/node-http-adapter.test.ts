import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HttpRequest, HttpResponse } from "../../lib/api/http.js";
import { MAX_BODY_BYTES } from "../../lib/api/request-parsing.js";
import { toHttpRequest, writeHttpResponse } from "../../lib/local/node-http-adapter.js";
import { Gate } from "../support/gate.js";

/** A node:http server over the adapter: what it read, and the response the test chose. */
let server: Server;
let base: string;
let seen: HttpRequest | undefined;
let respond: (request: HttpRequest) => HttpResponse = () => ({ status: 204, headers: {}, body: "" });

beforeAll(async () => {
  server = createServer(async (req, res) => {
    seen = await toHttpRequest(req);
    await writeHttpResponse(res, respond(seen));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
afterEach(() => {
  seen = undefined;
  respond = () => ({ status: 204, headers: {}, body: "" });
});

describe("toHttpRequest", () => {
  it("returns the method, path, lowercase headers, query and body text, able to stream", async () => {
    await fetch(`${base}/v1/things?limit=2&cursor=x`, { method: "POST", headers: { "X-Custom": "1" }, body: '{"a":1}' });
    expect(seen).toMatchObject({ method: "POST", path: "/v1/things", query: { limit: "2", cursor: "x" }, body: '{"a":1}', canStream: true });
    expect(seen?.headers["x-custom"]).toBe("1");
  });

  it("returns no body for a request without one", async () => {
    await fetch(`${base}/healthz`);
    expect(seen?.body).toBeUndefined();
  });

  it("keeps a body far over the limit only to just past it, so the router still answers 413", async () => {
    await fetch(`${base}/v1/big`, { method: "POST", body: "x".repeat(4 * MAX_BODY_BYTES) });
    expect(seen?.body?.length).toBeGreaterThan(MAX_BODY_BYTES);
    expect(seen?.body?.length).toBeLessThan(4 * MAX_BODY_BYTES);
  });
});

describe("writeHttpResponse", () => {
  it("writes the status, headers and body", async () => {
    respond = () => ({ status: 201, headers: { "content-type": "application/json", "x-id": "7" }, body: '{"ok":true}' });
    const response = await fetch(`${base}/v1/things`);
    expect(response.status).toBe(201);
    expect(response.headers.get("x-id")).toBe("7");
    expect(await response.text()).toBe('{"ok":true}');
  });

  it("writes a streamed response piece by piece, the first before the stream ends", async () => {
    const gate = new Gate();
    respond = () => ({
      status: 200,
      headers: { "content-type": "text/event-stream" },
      body: "",
      async *stream() {
        yield "event: one\n\n";
        await gate.pass();
        yield "event: two\n\n";
      },
    });
    const response = await fetch(`${base}/v1/stream`);
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe("event: one\n\n");
    gate.open();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe("event: two\n\n");
  });

  it("ends the stream when the client goes away", async () => {
    const gate = new Gate();
    let aborted: AbortSignal | undefined;
    respond = () => ({
      status: 200,
      headers: { "content-type": "text/event-stream" },
      body: "",
      async *stream(signal) {
        aborted = signal;
        yield "event: one\n\n";
        await gate.pass();
      },
    });
    const client = new AbortController();
    const response = await fetch(`${base}/v1/stream`, { signal: client.signal });
    await response.body!.getReader().read();
    client.abort();
    await new Promise<void>((resolve) => (aborted?.aborted ? resolve() : aborted?.addEventListener("abort", () => resolve())));
    expect(aborted?.aborted).toBe(true);
    gate.open();
  });
});
