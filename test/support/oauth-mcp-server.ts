import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { generateKeyPair, jwtVerify, SignJWT, type CryptoKey } from "jose";

/**
 * An MCP server that requires OAuth, with its authorization server on the same origin: the MCP
 * SDK's server and Streamable HTTP transport behind a bearer check with jose, the protected-resource
 * metadata (RFC 9728) its 401 names, and an authorization server (RFC 8414 metadata, dynamic client
 * registration, authorization code with PKCE S256, rotating refresh tokens) issuing ES256 JWTs.
 * The "browser" that signs in names its user in the `x-test-user` header of `GET /authorize`.
 */
export interface OAuthMcpServer {
  url: string;
  /** The MCP endpoint: `${url}/mcp`. */
  mcpUrl: string;
  /** Seconds an access token lives; tests lower it to see a refresh. */
  accessTtlSeconds: number;
  /** The subject of each accepted call to `whoami`, in order. */
  calls: string[];
  /** Grants served by `/token`, by type. */
  grants: { authorization_code: number; refresh_token: number };
  /** Revokes every token of a user at once: access tokens are refused by the resource server, refresh tokens by the token endpoint. */
  revoke(user: string): void;
  /** The user's browser: opens the authorization URL as `user` and returns where it is sent back (the callback, with code and state). */
  signIn(authorizationUrl: string | URL, user: string, options?: { deny?: boolean }): Promise<string>;
  close(): Promise<void>;
}

interface Code {
  clientId: string;
  challenge: string;
  redirectUri: string;
  user: string;
  resource: string | null;
}

const base64url = (buffer: Buffer) => buffer.toString("base64url");

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

export async function startOAuthMcpServer(): Promise<OAuthMcpServer> {
  const { privateKey, publicKey } = (await generateKeyPair("ES256")) as { privateKey: CryptoKey; publicKey: CryptoKey };
  const clients = new Map<string, { redirect_uris: string[] }>();
  const codes = new Map<string, Code>();
  const refreshTokens = new Map<string, { user: string; clientId: string; resource: string | null }>();
  const issued = new Map<string, string[]>();
  const revoked = new Set<string>();
  let base = "";

  const state: OAuthMcpServer = {
    url: "",
    mcpUrl: "",
    accessTtlSeconds: 3600,
    calls: [],
    grants: { authorization_code: 0, refresh_token: 0 },
    revoke(user) {
      for (const jti of issued.get(user) ?? []) revoked.add(jti);
      for (const [token, grant] of refreshTokens) if (grant.user === user) refreshTokens.delete(token);
    },
    async signIn(authorizationUrl, user, options = {}) {
      const res = await fetch(authorizationUrl, { redirect: "manual", headers: { "x-test-user": user, ...(options.deny ? { "x-test-deny": "1" } : {}) } });
      const location = res.headers.get("location");
      if (res.status !== 302 || !location) throw new Error(`authorize answered ${res.status}`);
      return location;
    },
    close: async () => undefined,
  };

  const issue = async (user: string, clientId: string, resource: string | null) => {
    const jti = randomUUID();
    issued.set(user, [...(issued.get(user) ?? []), jti]);
    const accessToken = await new SignJWT({ client_id: clientId, scope: "tools" })
      .setProtectedHeader({ alg: "ES256" })
      .setIssuer(base)
      .setSubject(user)
      .setAudience(resource ?? `${base}/mcp`)
      .setIssuedAt()
      .setJti(jti)
      .setExpirationTime(Math.floor(Date.now() / 1000) + state.accessTtlSeconds)
      .sign(privateKey);
    const refreshToken = base64url(randomBytes(24));
    refreshTokens.set(refreshToken, { user, clientId, resource });
    return { access_token: accessToken, token_type: "Bearer", expires_in: state.accessTtlSeconds, refresh_token: refreshToken, scope: "tools" };
  };

  /** The resource server's check: a valid signature, this issuer, this resource, not expired, not revoked. */
  const subjectOf = async (authorization: string | undefined): Promise<string | undefined> => {
    const token = /^Bearer (.+)$/.exec(authorization ?? "")?.[1];
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, publicKey, { issuer: base, audience: `${base}/mcp` });
      return revoked.has(payload.jti as string) ? undefined : payload.sub;
    } catch {
      return undefined;
    }
  };

  const mcp = async (req: IncomingMessage, res: ServerResponse) => {
    const subject = await subjectOf(req.headers.authorization);
    if (!subject) {
      send(
        res,
        401,
        { error: "invalid_token" },
        {
          "www-authenticate": `Bearer error="invalid_token", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
        },
      );
      return;
    }
    const server = new McpServer({ name: "oauth-test", version: "1.0.0" });
    server.registerTool("whoami", { description: "Names the user whose token called." }, async () => {
      state.calls.push(subject);
      return { content: [{ type: "text", text: subject }] };
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
    const body = req.method === "POST" ? await readBody(req) : undefined;
    const answer = await transport.handleRequest(new Request(`${base}${req.url}`, { method: req.method, headers, body }));
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      out[name] = value;
    });
    res.writeHead(answer.status, out);
    res.end(await answer.text());
    await server.close();
  };

  const token = async (req: IncomingMessage, res: ServerResponse) => {
    const form = new URLSearchParams(await readBody(req));
    const grant = form.get("grant_type");
    if (grant === "authorization_code") {
      const code = codes.get(form.get("code") ?? "");
      codes.delete(form.get("code") ?? "");
      const verifier = form.get("code_verifier") ?? "";
      const challenge = base64url(createHash("sha256").update(verifier).digest());
      if (!code || code.challenge !== challenge || code.clientId !== form.get("client_id") || code.redirectUri !== form.get("redirect_uri")) {
        send(res, 400, { error: "invalid_grant" });
        return;
      }
      state.grants.authorization_code++;
      send(res, 200, await issue(code.user, code.clientId, code.resource), { "cache-control": "no-store" });
      return;
    }
    if (grant === "refresh_token") {
      const presented = form.get("refresh_token") ?? "";
      const known = refreshTokens.get(presented);
      if (!known || known.clientId !== form.get("client_id")) {
        send(res, 400, { error: "invalid_grant", error_description: "refresh token revoked or unknown" });
        return;
      }
      refreshTokens.delete(presented);
      state.grants.refresh_token++;
      send(res, 200, await issue(known.user, known.clientId, known.resource), { "cache-control": "no-store" });
      return;
    }
    send(res, 400, { error: "unsupported_grant_type" });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", base);
    if (url.pathname.startsWith("/.well-known/oauth-protected-resource")) {
      send(res, 200, { resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: ["tools"], bearer_methods_supported: ["header"] });
    } else if (url.pathname === "/.well-known/oauth-authorization-server") {
      send(res, 200, {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        registration_endpoint: `${base}/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        scopes_supported: ["tools"],
      });
    } else if (url.pathname === "/register" && req.method === "POST") {
      const metadata = JSON.parse(await readBody(req)) as { redirect_uris: string[] };
      const clientId = randomUUID();
      clients.set(clientId, metadata);
      send(res, 201, { ...metadata, client_id: clientId, client_id_issued_at: Math.floor(Date.now() / 1000) });
    } else if (url.pathname === "/authorize") {
      const p = url.searchParams;
      const user = req.headers["x-test-user"];
      const client = clients.get(p.get("client_id") ?? "");
      const redirectUri = p.get("redirect_uri") ?? "";
      if (typeof user !== "string" || !client?.redirect_uris.includes(redirectUri) || p.get("code_challenge_method") !== "S256") {
        send(res, 400, { error: "invalid_request" });
        return;
      }
      const back = new URL(redirectUri);
      back.searchParams.set("state", p.get("state") ?? "");
      if (req.headers["x-test-deny"]) back.searchParams.set("error", "access_denied");
      else {
        const code = base64url(randomBytes(24));
        codes.set(code, { clientId: p.get("client_id") ?? "", challenge: p.get("code_challenge") ?? "", redirectUri, user, resource: p.get("resource") });
        back.searchParams.set("code", code);
      }
      res.writeHead(302, { location: back.href });
      res.end();
    } else if (url.pathname === "/token" && req.method === "POST") {
      await token(req, res);
    } else if (url.pathname === "/mcp") {
      await mcp(req, res);
    } else send(res, 404, { error: "not_found" });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { error: "server_error" });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.url = base;
  state.mcpUrl = `${base}/mcp`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
