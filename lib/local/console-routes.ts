import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
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

/** URL path → file and content type: the page, its stylesheet, and each of its ES modules (`app.js` is the entry). */
function assets(dir: string): Record<string, { file: string; type: string }> {
  const modules = readdirSync(dir).filter((file) => /^[\w-]+\.js$/.test(file));
  return {
    "/": { file: "index.html", type: "text/html; charset=utf-8" },
    "/console/styles.css": { file: "styles.css", type: "text/css; charset=utf-8" },
    ...Object.fromEntries(modules.map((file) => [`/console/${file}`, { file, type: "text/javascript; charset=utf-8" }])),
  };
}

export interface ConsoleRoutesOptions {
  /** Where index.html, styles.css and the `.js` modules are read from. Default: {@link DEFAULT_CONSOLE_DIR}. */
  dir?: string;
}

interface Asset {
  body: string;
  type: string;
  etag: string;
}

/**
 * `GET /` and the console's modules and stylesheet, read once at start-up. Served by the local
 * server only: the page signs in with `POST /local/token`, which exists nowhere else.
 */
export function consoleRoutes(options: ConsoleRoutesOptions = {}): Route[] {
  const dir = options.dir ?? DEFAULT_CONSOLE_DIR;
  return Object.entries(assets(dir)).map(([path, { file, type }]) => {
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
