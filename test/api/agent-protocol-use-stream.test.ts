import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { CHROMIUM_ARGS, findChromium } from "../support/chromium.js";

/**
 * LangGraph's React hook `useStream` in headless Chromium, against the local server: a page built
 * with the SDK (test/api/use-stream-page/app.ts) holds a conversation with a tool call and an
 * approval. The page and the API share one origin through a small proxy, as a frontend served
 * beside its API would.
 */
const CHROMIUM = findChromium();
const inCi = process.env.CI === "true" || process.env.CI === "1";
const haveChromium = CHROMIUM !== undefined;
if (!haveChromium && !inCi) console.warn("useStream e2e skipped: no Chromium or Chrome found (set CHROMIUM_PATH, or run: bash .ci/install-chromium.sh)");
const describeWithBrowser = haveChromium || inCi ? describe : describe.skip;
const WAIT = { timeout: 20_000 };

let api: TestServer;
let proxy: Server;
let origin: string;
let browser: Browser;
let page: Page;

/** Serves the page and its bundle, and passes every other request to the local server as it comes (streams included). */
async function startProxy(bundle: string): Promise<Server> {
  const target = new URL(api.url);
  const html = [
    '<!doctype html><html><head><meta charset="utf-8"><title>useStream</title></head>',
    '<body><div id="root"></div><script type="module" src="/app.js"></script></body></html>',
  ].join("");
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/") return void res.writeHead(200, { "content-type": "text/html" }).end(html);
    if (req.method === "GET" && path === "/app.js") return void res.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    const upstream = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

beforeAll(async () => {
  if (!haveChromium && !inCi) return;
  api = await startTestServer({ TOOL_APPROVALS: '{"create_follow_up": {"require": "always"}}' });
  const built = await build({
    entryPoints: [fileURLToPath(new URL("./use-stream-page/app.ts", import.meta.url))],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  proxy = await startProxy(built.outputFiles[0].text);
  origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM ?? "chromium", args: CHROMIUM_ARGS });
  page = await browser.newPage();
  await page.goto(`${origin}/?token=${await api.token("ada")}`);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => proxy?.close(resolve));
  await api?.close();
});

async function ask(question: string): Promise<void> {
  await page.fill("#question", question);
  await page.click("#send");
}

const messageTypes = () => page.$$eval("#messages li", (items) => items.map((li) => li.getAttribute("data-type")));

describeWithBrowser("useStream against Threadwise", () => {
  it("holds a conversation: a question, a tool call and its answer, on one thread", async () => {
    await ask("My name is Ada.");
    await page.waitForFunction(
      () => document.querySelectorAll('#messages li[data-type="ai"]').length === 1 && document.querySelector("#status")?.textContent === "idle",
      null,
      WAIT,
    );
    const threadId = await page.textContent("#thread");
    expect(threadId).toMatch(/^[0-9a-f-]{36}$/);

    await ask('sql_query {"sql": "SELECT count(*) AS n FROM customers"}');
    await page.waitForFunction(
      () => document.querySelectorAll('#messages li[data-type="tool"]').length === 1 && document.querySelector("#status")?.textContent === "idle",
      null,
      WAIT,
    );
    expect(await messageTypes()).toEqual(["human", "ai", "human", "ai", "tool", "ai"]);
    expect(await page.$("#error")).toBeNull();
    // What the page shows is the durable thread.
    const state = await api.call("GET", `/v1/conversations/${threadId}/state`, { token: await api.token("ada") });
    expect(state.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "user", "assistant", "tool", "assistant"]);
  });

  it("shows an approval as an interrupt and resumes the run when it is approved", async () => {
    await ask('create_follow_up {"title": "Call the top customer"}');
    await page.waitForSelector("#approve", WAIT);
    expect(await page.textContent("#waiting-tool")).toBe("create_follow_up");
    const threadId = (await page.textContent("#thread")) as string;
    expect(await api.db.collection("follow_ups").countDocuments({ conversationId: threadId })).toBe(0);

    await page.click("#approve");
    await page.waitForFunction(() => !document.querySelector("#approve") && document.querySelector("#status")?.textContent === "idle", null, WAIT);
    await page.waitForFunction(() => document.querySelector("#messages li:last-child")?.getAttribute("data-type") === "ai", null, WAIT);
    expect(await api.db.collection("follow_ups").countDocuments({ conversationId: threadId })).toBe(1);
    expect(await page.$("#error")).toBeNull();
  });
});
