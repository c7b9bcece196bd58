import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface PowerBiEndpointOptions {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  groupId: string;
  datasetId: string;
  /** Rows answered per DAX query (matched after collapsing whitespace). */
  queries: Record<string, Record<string, unknown>[]>;
  /**
   * Row-level security, as a dataset with RLS roles applies it to the user a query impersonates:
   * a row whose `column` is set is returned only to the users it lists. With it, a query without
   * `impersonatedUserName` is refused, as the service answers for an RLS dataset queried without an
   * effective identity. Default: none (every row to every caller).
   */
  rls?: { column: string; users: Record<string, string[]> };
  /** Lifetime of issued tokens. Default: 3599 s, as Entra ID issues them. */
  expiresInSeconds?: number;
}

export interface PowerBiEndpoint {
  /** Base for `POWERBI_LOGIN_URL`. */
  loginUrl: string;
  /** Base for `POWERBI_API_URL`. */
  apiUrl: string;
  tokenRequests: number;
  queryRequests: { authorization?: string; body: unknown }[];
  /** The next `count` executeQueries requests answer 429 with this Retry-After. */
  throttle(count: number, retryAfter: string | undefined): void;
  /** Invalidates every token issued so far, as a token expiring would. */
  revokeTokens(): void;
  close(): Promise<void>;
}

const normalize = (dax: string) => dax.replace(/\s+/g, " ").trim();

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The error body executeQueries returns for a query the engine rejects. */
function daxError(message: string) {
  return {
    error: {
      code: "DatasetExecuteQueriesError",
      "pbi.error": {
        code: "DatasetExecuteQueriesError",
        parameters: {},
        details: [
          { code: "DetailsMessage", detail: { type: 1, value: message } },
          { code: "AnalysisServicesErrorCode", detail: { type: 1, value: "3238133769" } },
        ],
      },
    },
  };
}

/**
 * A local stand-in for Entra ID's token endpoint and Power BI's executeQueries, with their
 * request and response shapes: form-encoded client credentials, bearer tokens, the results
 * envelope, 401 for a bad or revoked token, 400 DatasetExecuteQueriesError, 404 ItemNotFound,
 * 429 with Retry-After, and row-level security by the request's `impersonatedUserName`.
 */
export async function startPowerBiEndpoint(options: PowerBiEndpointOptions): Promise<PowerBiEndpoint> {
  const valid = new Set<string>();
  const queries = new Map(Object.entries(options.queries).map(([k, v]) => [normalize(k), v]));
  let throttled = 0;
  let retryAfter: string | undefined;
  const state = {
    tokenRequests: 0,
    queryRequests: [] as { authorization?: string; body: unknown }[],
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const raw = await readBody(req);
    if (req.method === "POST" && url.pathname === `/login/${options.tenantId}/oauth2/v2.0/token`) {
      state.tokenRequests++;
      const form = new URLSearchParams(raw);
      if (
        req.headers["content-type"] !== "application/x-www-form-urlencoded" &&
        !req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded")
      ) {
        return send(res, 400, {
          error: "invalid_request",
          error_description: "AADSTS900144: The request body must contain the following parameter: 'grant_type'.",
        });
      }
      if (form.get("grant_type") !== "client_credentials") {
        return send(res, 400, { error: "unsupported_grant_type", error_description: "AADSTS70003" });
      }
      if (form.get("scope") !== "https://analysis.windows.net/powerbi/api/.default") {
        return send(res, 400, { error: "invalid_scope", error_description: "AADSTS70011" });
      }
      if (form.get("client_id") !== options.clientId || form.get("client_secret") !== options.clientSecret) {
        return send(res, 401, { error: "invalid_client", error_description: "AADSTS7000215: Invalid client secret provided." });
      }
      const token = `eyJ.${randomUUID()}`;
      valid.add(token);
      return send(res, 200, { token_type: "Bearer", expires_in: options.expiresInSeconds ?? 3599, ext_expires_in: 3599, access_token: token });
    }

    const match = /^\/v1\.0\/myorg\/groups\/([^/]+)\/datasets\/([^/]+)\/executeQueries$/.exec(url.pathname);
    if (req.method === "POST" && match) {
      const authorization = req.headers.authorization;
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      state.queryRequests.push({ authorization, body });
      const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined;
      if (!token || !valid.has(token)) {
        return send(res, 401, undefined, { "www-authenticate": 'Bearer authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize"' });
      }
      if (throttled > 0) {
        throttled--;
        return send(
          res,
          429,
          { error: { code: "TooManyRequests", message: "Rate limit exceeded" } },
          retryAfter === undefined ? {} : { "retry-after": retryAfter },
        );
      }
      if (match[1] !== options.groupId || match[2] !== options.datasetId) {
        return send(res, 404, {
          error: {
            code: "ItemNotFound",
            message: `Dataset ${match[2]} is not found! please verify datasetId is correct and user have sufficient permissions.`,
          },
        });
      }
      const dax = (body as { queries?: { query?: string }[] } | undefined)?.queries?.[0]?.query;
      if (typeof dax !== "string") return send(res, 400, { error: { code: "InvalidRequest", message: "queries is required" } });
      const user = (body as { impersonatedUserName?: unknown }).impersonatedUserName;
      const rls = options.rls;
      if (rls && (typeof user !== "string" || user.length === 0)) {
        return send(res, 400, daxError("The dataset has row-level security: executeQueries needs impersonatedUserName, the user whose roles apply."));
      }
      const rows = queries.get(normalize(dax));
      if (rows) {
        const allowed = rls ? (rls.users[user as string] ?? []) : undefined;
        const visible = allowed ? rows.filter((row) => !(rls!.column in row) || allowed.includes(String(row[rls!.column]))) : rows;
        return send(res, 200, { results: [{ tables: [{ rows: visible }] }] });
      }
      if (!/^\s*(EVALUATE|DEFINE)\b/i.test(dax)) {
        return send(res, 400, daxError(`Query (1, 1) The syntax for '${dax.trim().split(/\s+/)[0]}' is incorrect.`));
      }
      const table = /'([^']+)'/.exec(dax)?.[1] ?? "Unknown";
      return send(res, 400, daxError(`Query (1, 10) Cannot find table '${table}'.`));
    }
    send(res, 404, { error: { code: "NotFound" } });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    loginUrl: `${base}/login`,
    apiUrl: `${base}/v1.0/myorg`,
    get tokenRequests() {
      return state.tokenRequests;
    },
    queryRequests: state.queryRequests,
    throttle(count, after) {
      throttled = count;
      retryAfter = after;
    },
    revokeTokens: () => valid.clear(),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
