import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { HttpRequest, HttpResponse } from "../api/http.js";
import type { Route } from "../api/router.js";

/** The console's static files, beside this module. */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL("./console/", import.meta.url));

/**
 * Only this origin's own script, styles and API; no inline code, no frames, nothing from the
 * network. `data:` images cover the empty favicon that keeps browsers from asking for one.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** URL path → file and content type. */
const ASSETS = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/console/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/console/approvals.js": { file: "approvals.js", type: "text/javascript; charset=utf-8" },
  "/console/styles.css": { file: "styles.css", type: "text/css; charset=utf-8" },
} as const;

export interface ConsoleRoutesOptions {
  /** Where index.html, the scripts and styles.css are read from. Default: {@link DEFAULT_CONSOLE_DIR}. */
  dir?: string;
}

interface Asset {
  body: string;
  type: string;
  etag: string;
}

/**
 * `GET /` and the console's script and stylesheet, read once at start-up. Served by the local
 * server only: the page signs in with `POST /local/token`, which exists nowhere else.
 */
export function consoleRoutes(options: ConsoleRoutesOptions = {}): Route[] {
  const dir = options.dir ?? DEFAULT_CONSOLE_DIR;
  return Object.entries(ASSETS).map(([path, { file, type }]) => {
    const body = readFileSync(join(dir, file), "utf8");
    const asset: Asset = { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` };
    return {
      method: "GET",
      pattern: new RegExp(`^${path.replace(/[.]/g, "\\.")}$`),
      handler: async (request: HttpRequest) => serve(asset, request),
    };
  });
}

function serve(asset: Asset, request: HttpRequest): HttpResponse {
  const headers: Record<string, string> = {
    "content-type": asset.type,
    "content-security-policy": CONSOLE_CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    // Revalidated on every load, answered by a 304 while the file is unchanged.
    "cache-control": "no-cache",
    etag: asset.etag,
  };
  if (request.headers["if-none-match"] === asset.etag) return { status: 304, headers, body: "" };
  return { status: 200, headers, body: asset.body };
}
