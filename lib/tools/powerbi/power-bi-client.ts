import { z } from "zod";
import { ToolError } from "../../errors.js";
import { valueBytes, type QueryLimits, type QueryResult } from "../sql/query-engine.js";
import type { EntraTokenProvider } from "./entra-token-provider.js";

/** Retries of a throttled (429) request before giving up. */
export const DEFAULT_POWERBI_MAX_RETRIES = 2;
/** Wait before retrying a 429 that carries no Retry-After header. */
export const DEFAULT_POWERBI_RETRY_AFTER_MS = 1_000;
/** A Retry-After longer than this is not waited for: the model is told to try later instead. */
export const DEFAULT_POWERBI_MAX_WAIT_MS = 10_000;
/** Longest response body read: above the 15 MB of data Power BI returns per query at most, so only a service misbehaving meets it. */
export const DEFAULT_POWERBI_MAX_RESPONSE_BYTES = 16 * 2 ** 20;

export interface PowerBiClientOptions {
  /** API base, e.g. `https://api.powerbi.com/v1.0/myorg`. */
  apiUrl: string;
  groupId: string;
  datasetId: string;
  tokens: EntraTokenProvider;
  fetch?: typeof fetch;
  /** Default: `DEFAULT_POWERBI_MAX_RETRIES`. */
  maxRetries?: number;
  /** Default: `DEFAULT_POWERBI_MAX_WAIT_MS`. */
  maxWaitMs?: number;
  /** Default: `DEFAULT_POWERBI_MAX_RESPONSE_BYTES`. */
  maxResponseBytes?: number;
}

/** Who a query runs as, and the signal that ends it. */
export interface PowerBiQueryIdentity {
  /** The user principal name Power BI impersonates (`powerBiUserOf`); never empty, so no query runs as the service itself. */
  userName: string;
  signal?: AbortSignal;
}

const resultsSchema = z.object({
  results: z.array(
    z.object({
      tables: z.array(z.object({ rows: z.array(z.record(z.string(), z.unknown())) })).optional(),
      error: z.unknown().optional(),
    }),
  ),
});

const pbiErrorSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string().optional(),
    "pbi.error": z
      .object({
        code: z.string().optional(),
        details: z.array(z.object({ code: z.string(), detail: z.object({ value: z.string() }).partial() })).optional(),
      })
      .optional(),
  }),
});

/** The message of a DAX error: the DetailsMessage entry the service returns, or the code. */
function describeError(body: unknown, status: number): string {
  const parsed = pbiErrorSchema.safeParse(body);
  if (!parsed.success) return `HTTP ${status}`;
  const details = parsed.data.error["pbi.error"]?.details ?? [];
  const message = details.find((d) => d.code === "DetailsMessage")?.detail.value ?? parsed.data.error.message;
  return message ? `${parsed.data.error.code}: ${message}` : parsed.data.error.code;
}

/** Retry-After is seconds or an HTTP date. */
function retryAfterMs(header: string | null): number {
  if (!header) return DEFAULT_POWERBI_RETRY_AFTER_MS;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? DEFAULT_POWERBI_RETRY_AFTER_MS : Math.max(0, date - Date.now());
}

/** The body as JSON (undefined when it is not JSON), read no further than `maxBytes`: a longer one is a tool error, not a process out of memory. */
async function readJson(response: Response, maxBytes: number): Promise<unknown> {
  const tooLarge = () =>
    new ToolError(`Power BI answered more than ${maxBytes} bytes; ask for fewer rows or columns (TOPN, SUMMARIZECOLUMNS)`, "query_semantic_model");
  if (Number(response.headers.get("content-length")) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = response.body?.getReader();
  for (let part = await reader?.read(); part && !part.done; part = await reader!.read()) {
    bytes += part.value.byteLength;
    if (bytes > maxBytes) {
      await reader!.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(part.value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return undefined;
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * DAX queries through the Power BI REST `executeQueries` API. A rejected token is renewed once;
 * throttling is retried after Retry-After (within limits); DAX errors come back with the service's
 * message so the model can fix its query.
 */
export class PowerBiClient {
  readonly #options: PowerBiClientOptions;
  readonly #fetch: typeof fetch;

  constructor(options: PowerBiClientOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  /**
   * Runs one DAX query as `as.userName` (the request's `impersonatedUserName`, so the model's
   * row-level security applies to that user); the result holds at most `maxRows` rows and `maxBytes`
   * bytes of values, counted as `sql_query` counts them.
   */
  async executeQuery(dax: string, limits: Pick<QueryLimits, "maxRows" | "maxBytes">, as: PowerBiQueryIdentity): Promise<QueryResult> {
    const { userName, signal } = as;
    if (!userName) throw new ToolError("refused: a Power BI query needs the asking user's identity", "query_semantic_model");
    const o = this.#options;
    const url = `${o.apiUrl.replace(/\/$/, "")}/groups/${encodeURIComponent(o.groupId)}/datasets/${encodeURIComponent(o.datasetId)}/executeQueries`;
    const maxRetries = o.maxRetries ?? DEFAULT_POWERBI_MAX_RETRIES;
    let renewed = false;
    for (let attempt = 0; ; attempt++) {
      const token = await o.tokens.getToken(signal);
      const response = await this.#fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ queries: [{ query: dax }], serializerSettings: { includeNulls: true }, impersonatedUserName: userName }),
        signal,
      });
      const body = await readJson(response, o.maxResponseBytes ?? DEFAULT_POWERBI_MAX_RESPONSE_BYTES);
      if (response.status === 401 && !renewed) {
        renewed = true;
        o.tokens.invalidate();
        continue;
      }
      if (response.status === 429) {
        const wait = retryAfterMs(response.headers.get("retry-after"));
        if (attempt >= maxRetries || wait > (o.maxWaitMs ?? DEFAULT_POWERBI_MAX_WAIT_MS)) {
          throw new ToolError(`Power BI is throttling requests; try again in ${Math.ceil(wait / 1000)} s or use sql_query`, "query_semantic_model");
        }
        await sleep(wait, signal);
        continue;
      }
      if (response.status === 401 || response.status === 403) {
        throw new ToolError(`Power BI refused access (HTTP ${response.status}); the service principal needs access to the dataset`, "query_semantic_model");
      }
      if (!response.ok) {
        throw new ToolError(`the DAX query failed: ${describeError(body, response.status)}`, "query_semantic_model");
      }
      return toResult(body, limits);
    }
  }
}

/**
 * The rows kept, up to `maxRows` and `maxBytes`, and the columns of those rows only: rows whose keys
 * differ (a service answering oddly) must not make a table of every row's columns, and a missing or
 * null cell counts 8 bytes, so a wide table of nulls is cut as a wide table of values is.
 */
function toResult(body: unknown, { maxRows, maxBytes = Number.POSITIVE_INFINITY }: Pick<QueryLimits, "maxRows" | "maxBytes">): QueryResult {
  const parsed = resultsSchema.safeParse(body);
  if (!parsed.success) throw new ToolError("Power BI returned an unexpected response", "query_semantic_model");
  const first = parsed.data.results[0];
  if (first?.error) throw new ToolError(`the DAX query failed: ${describeError({ error: first.error }, 200)}`, "query_semantic_model");
  const rows = first?.tables?.[0]?.rows ?? [];
  const columns = new Set<string>();
  let kept = 0;
  let keptBytes = 0;
  let values = 0;
  let truncated: QueryResult["truncated"] = false;
  for (const row of rows) {
    if (kept === maxRows) {
      truncated = "rows";
      break;
    }
    const keys = Object.keys(row);
    const added = keys.filter((k) => !columns.has(k));
    const present = keys.filter((k) => row[k] !== null && row[k] !== undefined);
    const rowBytes = present.reduce((sum, k) => sum + valueBytes(row[k]), 0);
    // Every cell of the kept rows over every column: values by size, the rest 8.
    const cells = (kept + 1) * (columns.size + added.length);
    if (keptBytes + rowBytes + 8 * (cells - values - present.length) > maxBytes) {
      truncated = "bytes";
      break;
    }
    for (const k of added) columns.add(k);
    keptBytes += rowBytes;
    values += present.length;
    kept += 1;
  }
  const names = [...columns];
  return { columns: names, rows: rows.slice(0, kept).map((r) => names.map((c) => r[c] ?? null)), truncated };
}
