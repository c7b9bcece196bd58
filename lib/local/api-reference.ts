import type { HttpResponse } from "../api/http.js";
import type { Route } from "../api/router.js";
import { openApiDocument } from "../api/openapi.js";

/** The reference page's policy: the console's stylesheet and nothing else; no script at all. */
export const API_REFERENCE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: unknown;
}
interface Operation {
  operationId: string;
  summary?: string;
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text: unknown): string => String(text ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
/** Markdown's code spans as `<code>`, everything else as text. */
const prose = (text: unknown): string => escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
const schemaBlock = (schema: unknown): string =>
  schema === undefined ? "" : `<details><summary>schema</summary><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre></details>`;

const methodBadge = (method: string): string => `<span class="ref-method ref-${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span>`;

function operationSection(method: string, path: string, op: Operation): string {
  const params = op.parameters ?? [];
  const body = op.requestBody?.content?.["application/json"];
  const auth = op.security && op.security.length === 0 ? "no authentication" : "bearer JWT";
  return [
    `<section class="ref-operation" id="${escapeHtml(op.operationId)}" aria-labelledby="${escapeHtml(op.operationId)}-title">`,
    `<h2 id="${escapeHtml(op.operationId)}-title">${methodBadge(method)} <code>${escapeHtml(path)}</code></h2>`,
    `<p>${prose(op.summary)} <span class="ref-auth">(${auth})</span></p>`,
    params.length
      ? `<table><caption>Parameters</caption><thead><tr><th>name</th><th>in</th><th>required</th><th>about</th></tr></thead><tbody>${params
          .map(
            (p) =>
              `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? "yes" : "no"}</td>` +
              `<td>${prose(p.description)} ${schemaBlock(p.schema)}</td></tr>`,
          )
          .join("")}</tbody></table>`
      : "",
    body ? `<h3>Request body${op.requestBody?.required ? "" : " (optional)"}: JSON</h3>${schemaBlock(body.schema)}` : "",
    `<table><caption>Responses</caption><thead><tr><th>status</th><th>when</th></tr></thead><tbody>${Object.entries(op.responses)
      .map(([status, r]) => `<tr><td>${escapeHtml(status)}</td><td>${prose(r.description)} ${schemaBlock(Object.values(r.content ?? {})[0]?.schema)}</td></tr>`)
      .join("")}</tbody></table>`,
    "</section>",
  ].join("\n");
}

/** The HTTP API's reference as one HTML page, from the OpenAPI document the server serves: every operation, its parameters, body and answers. */
export function apiReferenceHtml(document: Record<string, unknown> = openApiDocument()): string {
  const info = document.info as { title: string; version: string; description?: string };
  const servers = (document.servers as { url: string; description?: string }[] | undefined) ?? [];
  const paths = document.paths as Record<string, Record<string, Operation>>;
  const operations = Object.entries(paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
  return [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(info.title)}: API reference</title>`,
    '<link rel="icon" href="data:,"><link rel="stylesheet" href="/console/styles.css"></head>',
    '<body class="ref"><main class="ref-main">',
    `<h1>${escapeHtml(info.title)} <span class="ref-version">${escapeHtml(info.version)}</span></h1>`,
    `<p>${prose(info.description)} The machine-readable document is <a href="/openapi.json"><code>/openapi.json</code></a>; ` +
      'the console is at <a href="/">/</a>.</p>',
    `<ul class="ref-servers">${servers.map((s) => `<li><code>${escapeHtml(s.url)}</code>: ${prose(s.description)}</li>`).join("")}</ul>`,
    `<nav aria-label="Operations"><ol class="ref-toc">${operations
      .map(({ path, method, op }) => `<li><a href="#${escapeHtml(op.operationId)}">${methodBadge(method)} <code>${escapeHtml(path)}</code></a></li>`)
      .join("")}</ol></nav>`,
    ...operations.map(({ path, method, op }) => operationSection(method, path, op)),
    "</main></body></html>",
  ].join("\n");
}

/** `GET /docs`: the API reference, rendered once at start-up from the same document as `/openapi.json`; nothing is fetched. */
export function apiReferenceRoute(): Route {
  const body = apiReferenceHtml();
  const response: HttpResponse = {
    status: 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": API_REFERENCE_CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-cache",
    },
    body,
  };
  return { method: "GET", pattern: /^\/docs\/?$/, handler: async () => response };
}
