import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import type { McpServerEntry } from "../../lib/config/mcp-servers-config.js";
import { checkedAddress, egressFetch, LOOPBACK_NETWORKS, McpEgressError } from "../../lib/mcp/egress-fetch.js";
import { McpConnections } from "../../lib/mcp/mcp-connections.js";
import { parseCidr } from "../../lib/config/mcp-ip-ranges.js";
import { startHostileServer } from "../support/mcp-servers.js";
import { propertyRuns } from "../support/property-runs.js";

/** A TCP listener on every local address (IPv4 and IPv6) that counts the connections it gets. */
let listener: TcpServer;
let port: number;
let connections = 0;
/** Names the test resolver knows (no DNS is reachable here): a name that resolves to a metadata or private address. */
const NAMES: Record<string, string[]> = {
  "169.254.169.254.nip.io": ["169.254.169.254"],
  "rebind.example": ["8.8.8.8", "127.0.0.1"],
  "internal.example": ["10.0.0.5"],
  "public.example": ["93.184.215.14"],
};
const resolve = async (hostname: string) => {
  const known = NAMES[hostname.replace(/\.$/, "")];
  if (known) return known;
  const { lookup } = await import("node:dns/promises");
  return (await lookup(hostname, { all: true })).map((a) => a.address);
};

beforeAll(async () => {
  listener = createTcpServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((r) => listener.listen(0, "::", r));
  port = (listener.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => listener.close(() => r())));

/** Host spellings of loopback, private and metadata addresses a URL accepts. */
const refusedHosts = fc.oneof(
  fc.constantFrom(
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "0x7f.0.0.1",
    "localhost",
    "localhost.",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[::ffff:0:7f00:1]",
    "[2002:7f00:1::]",
    "0.0.0.0",
    "0",
    "[::]",
    "169.254.169.254",
    "[::ffff:a9fe:a9fe]",
    "[::169.254.169.254]",
    "[64:ff9b::a9fe:a9fe]",
    "[fd00:ec2::254]",
    "169.254.169.254.nip.io",
    "169.254.169.254.nip.io.",
    "internal.example",
    "rebind.example",
    "10.0.0.1",
    "100.64.0.1",
    "192.168.0.1",
    "172.16.5.4",
  ),
  fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 })).map(([b, c, d]) => `127.${b}.${c}.${d}`),
  fc
    .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }))
    .map(([c, d]) => `[::ffff:${((169 << 8) | 254).toString(16)}:${((c << 8) | d).toString(16)}]`),
);

describe("egressFetch", () => {
  it("never connects to a loopback, private or metadata address, in any spelling, resolved or literal", async () => {
    const fetch = egressFetch({ maxResponseBytes: 1_000_000, resolve });
    await fc.assert(
      fc.asyncProperty(refusedHosts, fc.constantFrom("GET", "POST"), async (host, method) => {
        const before = connections;
        const error = await fetch(`http://${host}:${port}/mcp`, { method, ...(method === "POST" && { body: "{}" }) }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(McpEgressError);
        expect((error as McpEgressError).reason).toBe("address_refused");
        expect(connections).toBe(before);
      }),
      { numRuns: propertyRuns(150) },
    );
    expect(connections).toBe(0);
  });

  it("connects to loopback once an operator allows it, to the address it checked", async () => {
    const fetch = egressFetch({ maxResponseBytes: 1_000_000, allow: LOOPBACK_NETWORKS, resolve });
    await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined);
    await fetch(`http://[::1]:${port}/`).catch(() => undefined);
    expect(connections).toBe(2);
    connections = 0;
  });
});

describe("checkedAddress", () => {
  it("returns a public address, and refuses a name any of whose addresses is not public (no rebinding to a second answer)", async () => {
    expect(await checkedAddress("public.example", [], resolve)).toMatchObject({ version: 4 });
    await expect(checkedAddress("rebind.example", [], resolve)).rejects.toMatchObject({ reason: "address_refused" });
    await expect(checkedAddress("internal.example", [parseCidr("10.0.0.0/8")!], resolve)).resolves.toMatchObject({ version: 4 });
  });
});

describe("redirects", () => {
  let first: HttpServer;
  let target: HttpServer;
  let firstUrl: string;
  let targetUrl: string;
  let targetHits = 0;
  let answer = { status: 307, location: "/elsewhere" };

  beforeAll(async () => {
    target = createHttpServer((_req, res) => {
      targetHits += 1;
      res.end("{}");
    });
    first = createHttpServer((req, res) => {
      if (req.url === "/elsewhere") {
        targetHits += 1;
        res.end("{}");
        return;
      }
      res.writeHead(answer.status, { location: answer.location }).end();
    });
    await Promise.all([new Promise<void>((r) => target.listen(0, "127.0.0.1", r)), new Promise<void>((r) => first.listen(0, "127.0.0.1", r))]);
    firstUrl = `http://127.0.0.1:${(first.address() as AddressInfo).port}`;
    targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    first.closeAllConnections();
    target.closeAllConnections();
    await Promise.all([new Promise((r) => first.close(r)), new Promise((r) => target.close(r))]);
  });

  it("refuses every redirect, for GET and POST, whatever its status and target: nothing is followed", async () => {
    const fetch = egressFetch({ maxResponseBytes: 1_000_000, allow: LOOPBACK_NETWORKS, resolve });
    const locations = fc.constantFrom(
      "/elsewhere",
      `${targetUrl}/mcp`,
      "http://169.254.169.254/latest/meta-data/",
      `http://[::ffff:7f00:1]:${port}/`,
      "//evil.example/",
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(301, 302, 303, 307, 308), locations, fc.constantFrom("GET", "POST"), async (status, location, method) => {
        answer = { status, location };
        const error = await fetch(`${firstUrl}/mcp`, { method, ...(method === "POST" && { body: "{}" }) }).catch((e: unknown) => e);
        expect(error).toMatchObject({ reason: "redirect_refused" });
      }),
      { numRuns: propertyRuns(40) },
    );
    expect(targetHits).toBe(0);
    expect(connections).toBe(0);
  });
});

describe("McpConnections over the egress check", () => {
  let hostile: Awaited<ReturnType<typeof startHostileServer>>;
  let redirecting: HttpServer;
  let redirectingUrl: string;
  beforeAll(async () => {
    hostile = await startHostileServer();
    // Same origin, another path: the SDK alone follows such a 307 for POST and GET.
    redirecting = createHttpServer((req, res) => {
      res.writeHead(307, { location: hostile.url }).end();
      req.resume();
    });
    await new Promise<void>((r) => redirecting.listen(0, "127.0.0.1", r));
    redirectingUrl = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    redirecting.closeAllConnections();
    await new Promise((r) => redirecting.close(r));
    await hostile?.stop();
  });
  const scope = (url: string) => ({
    tenant: "acme",
    entry: { name: "crm", transport: { kind: "streamable-http", url } } satisfies McpServerEntry,
    principal: apiPrincipal("alice", "acme"),
  });

  it("throws egress_refused for an IPv4-mapped URL of a loopback server, which gets no request", async () => {
    const connections = new McpConnections({ secrets: { get: async () => undefined } });
    const mapped = hostile.url.replace("127.0.0.1", "[::ffff:127.0.0.1]");
    await expect(connections.get(scope(mapped))).rejects.toMatchObject({ reason: "egress_refused" });
    await expect(connections.get(scope(hostile.url))).rejects.toMatchObject({ reason: "egress_refused" });
    expect(hostile.seenHeaders).toEqual([]);
    await connections.close();
  });

  it("connects to a loopback server once allowed, and refuses one that redirects, never reaching the redirect's target", async () => {
    const connections = new McpConnections({ secrets: { get: async () => undefined }, egress: { allow: LOOPBACK_NETWORKS } });
    await expect(connections.get(scope(redirectingUrl))).rejects.toMatchObject({ reason: "egress_refused" });
    expect(hostile.seenHeaders).toEqual([]);
    const direct = await connections.get(scope(hostile.url));
    expect((await direct.client.listTools()).tools.length).toBeGreaterThan(0);
    await connections.close();
  });
});
