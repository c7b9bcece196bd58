import { lookup as dnsLookup } from "node:dns/promises";
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { formatIp, isAllowedAddress, isPublicAddress, parseCidr, parseIp, type Cidr, type IpAddress } from "../config/mcp-ip-ranges.js";
import { ThreadwiseError } from "../errors.js";

/** Most bytes of one response of an OAuth endpoint (metadata, registration, tokens): a few KB is usual. */
export const DEFAULT_OAUTH_RESPONSE_BYTES = 1024 * 1024;

/** Loopback, which the local server allows so MCP servers on the developer's machine are reached (never set in AWS). */
export const LOOPBACK_NETWORKS = ["127.0.0.0/8", "::1/128"] as const;

/** Why an MCP request was not made or not read to its end. */
export class McpEgressError extends ThreadwiseError {
  override name = "McpEgressError";
  constructor(
    message: string,
    readonly reason: "address_refused" | "redirect_refused" | "response_too_large",
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Resolves a host name to every address it has (the system resolver, as `dns.lookup`). */
export type Resolve = (hostname: string) => Promise<string[]>;

const systemResolve: Resolve = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

export interface EgressOptions {
  /** Networks reachable although not public (`MCP_EGRESS_ALLOW`, and loopback for the local server), as CIDRs. Default: none. */
  allow?: readonly string[];
  /** Default: the system resolver. */
  resolve?: Resolve;
}

export interface EgressFetchOptions extends EgressOptions {
  /**
   * Most bytes of one response body (of one event in an event stream), read as they arrive: past
   * it the body fails with `response_too_large` and the connection is closed, before anything parses it.
   */
  maxResponseBytes: number;
  /**
   * Told when a body goes past `maxResponseBytes`: in an event stream the SDK only logs a failed
   * stream, so the caller fails the calls waiting on it rather than let them run to their timeout.
   * Default: none.
   */
  onResponseTooLarge?: (error: McpEgressError) => void;
}

/**
 * A `fetch` for the MCP SDK (its transport's `fetch`, `auth()`'s `fetchFn`) that goes only where
 * egress is allowed: the host is resolved and every address checked (public unicast, or in
 * `allow`; loopback, private, link-local, metadata, CGNAT and their IPv6 spellings are not), the
 * connection is made to that checked address (no second lookup to rebind), a redirect is refused
 * rather than followed, and the body is cut at `maxResponseBytes` while it is read.
 */
export function egressFetch(options: EgressFetchOptions): FetchLike {
  const allow = (options.allow ?? []).map((c) => parseCidr(c)).filter((c): c is Cidr => c !== undefined);
  const resolve = options.resolve ?? systemResolve;
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  return async (input, init) => {
    const url = new URL(String(input));
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new McpEgressError(`${url.protocol} is not an MCP server's scheme`, "address_refused");
    }
    const address = await checkedAddress(url.hostname, allow, resolve);
    const agent = url.protocol === "https:" ? agents.https : agents.http;
    const response = await send(url, address, init, agent, options.maxResponseBytes, options.onResponseTooLarge);
    if (response.status >= 300 && response.status < 400 && response.status !== 304) {
      await response.body?.cancel();
      throw new McpEgressError(`${url.origin} answered with a redirect (${response.status}), which is not followed`, "redirect_refused");
    }
    return response;
  };
}

/**
 * The address to connect to for `hostname`: the literal itself, or what the resolver gives, every
 * address of which must pass (one refused address refuses the host: a name that resolves to a
 * private address among public ones is not used).
 */
export async function checkedAddress(hostname: string, allow: readonly Cidr[], resolve: Resolve): Promise<IpAddress> {
  const literal = parseIp(hostname);
  const addresses = literal ? [literal] : await resolveAll(hostname, resolve);
  if (addresses.length === 0) throw new McpEgressError(`${hostname} has no address`, "address_refused");
  for (const ip of addresses) {
    if (!isPublicAddress(ip) && !isAllowedAddress(ip, allow)) {
      throw new McpEgressError(
        `${hostname} is at ${formatIp(ip)}, which is not a public address; an operator can allow its network (MCP_EGRESS_ALLOW)`,
        "address_refused",
      );
    }
  }
  return addresses[0]!;
}

async function resolveAll(hostname: string, resolve: Resolve): Promise<IpAddress[]> {
  let found: string[];
  try {
    found = await resolve(hostname);
  } catch (error) {
    throw new McpEgressError(`${hostname} could not be resolved`, "address_refused", { cause: error });
  }
  return found.map((a) => {
    const ip = parseIp(a);
    if (!ip) throw new McpEgressError(`${hostname} resolved to something that is not an address`, "address_refused");
    return ip;
  });
}

function send(
  url: URL,
  address: IpAddress,
  init: RequestInit | undefined,
  agent: HttpAgent,
  maxBytes: number,
  onTooLarge: ((error: McpEgressError) => void) | undefined,
): Promise<Response> {
  const headers: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, key) => {
    headers[key] = value;
  });
  const body = bodyOf(init?.body);
  if (body !== undefined && headers["content-type"] === undefined && init?.body instanceof URLSearchParams) {
    headers["content-type"] = "application/x-www-form-urlencoded;charset=UTF-8";
  }
  const text = formatIp(address);
  // The connection goes to the checked address, whatever the name resolves to by now.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: text, family: address.version }]);
    else callback(null, text, address.version);
  };
  const options: RequestOptions & { servername?: string } = {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port || (url.protocol === "https:" ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    method: init?.method ?? "GET",
    headers,
    agent,
    lookup,
    ...(init?.signal ? { signal: init.signal } : {}),
  };
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Response>((resolve, reject) => {
    const req = request(options, (res) => {
      const status = res.statusCode ?? 502;
      const responseHeaders = new Headers();
      for (const [key, value] of Object.entries(res.headers)) {
        if (Array.isArray(value)) for (const v of value) responseHeaders.append(key, v);
        else if (value !== undefined) responseHeaders.set(key, value);
      }
      const empty = status === 204 || status === 304 || options.method === "HEAD";
      if (empty) res.resume();
      const eventStream = (responseHeaders.get("content-type") ?? "").includes("text/event-stream");
      try {
        resolve(
          new Response(empty ? null : cappedBody(res, maxBytes, eventStream, url, onTooLarge), {
            status,
            statusText: res.statusMessage,
            headers: responseHeaders,
          }),
        );
      } catch (error) {
        res.destroy();
        reject(error);
      }
    });
    req.on("error", reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

function bodyOf(body: RequestInit["body"]): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return body;
  if (body instanceof URLSearchParams) return body.toString();
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError("an MCP request body is a string, URLSearchParams or bytes");
}

/**
 * The response's body as a stream that fails once more than `maxBytes` came (in an event stream:
 * since the last event's end), destroying the socket: nothing past the cap is kept or parsed.
 */
function cappedBody(
  res: IncomingMessage,
  maxBytes: number,
  eventStream: boolean,
  url: URL,
  onTooLarge: ((error: McpEgressError) => void) | undefined,
): ReadableStream<Uint8Array> {
  let counted = 0;
  let newline = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const over = () => {
        res.destroy();
        const error = new McpEgressError(`${url.origin} sent more than ${maxBytes} bytes in one answer`, "response_too_large");
        controller.error(error);
        onTooLarge?.(error);
      };
      res.on("data", (chunk: Buffer) => {
        if (!eventStream) {
          counted += chunk.length;
          if (counted > maxBytes) return over();
        } else {
          for (const byte of chunk) {
            if (byte === 10) {
              if (newline) {
                counted = 0;
                newline = false;
                continue;
              }
              newline = true;
            } else if (byte !== 13) newline = false;
            counted += 1;
            if (counted > maxBytes) return over();
          }
        }
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      });
      res.on("end", () => {
        try {
          controller.close();
        } catch {
          // Already failed (over the cap).
        }
      });
      res.on("close", () => {
        if (res.complete) return;
        try {
          controller.error(new Error(`${url.origin} closed the connection before the answer ended`));
        } catch {
          // Already failed or closed.
        }
      });
      res.on("error", (error) => {
        try {
          controller.error(error);
        } catch {
          // Already closed.
        }
      });
    },
    cancel() {
      res.destroy();
    },
  });
}
