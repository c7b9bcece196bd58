import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { HttpRequest } from "../../lib/api/http.js";
import { createRouter } from "../../lib/api/router.js";
import { CONSOLE_CONTENT_SECURITY_POLICY, consoleRoutes, DEFAULT_CONSOLE_DIR } from "../../lib/local/console-routes.js";

const route = createRouter(consoleRoutes());
const get = (path: string, headers: Record<string, string> = {}) => route({ method: "GET", path, headers, query: {} } satisfies HttpRequest);
const file = (name: string) => readFileSync(join(DEFAULT_CONSOLE_DIR, name), "utf8");
const modules = readdirSync(DEFAULT_CONSOLE_DIR).filter((name) => name.endsWith(".js"));

describe("consoleRoutes", () => {
  describe("GET /", () => {
    it("returns the page as HTML under a policy that allows only this origin's script, styles and API", async () => {
      const res = await get("/");

      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(res.body).toBe(file("index.html"));
      const csp = res.headers["content-security-policy"];
      expect(csp).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain("unsafe");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
    });

    it("returns 304 with no body when If-None-Match names the served version", async () => {
      const first = await get("/");

      const again = await get("/", { "if-none-match": first.headers.etag });

      expect(again.status).toBe(304);
      expect(again.body).toBe("");
    });

    it("returns the page again when If-None-Match names another version", async () => {
      const res = await get("/", { "if-none-match": '"stale"' });

      expect(res.status).toBe(200);
      expect(res.body).toBe(file("index.html"));
    });

    it("throws when the method is not GET (405)", async () => {
      const res = await route({ method: "POST", path: "/", headers: {}, query: {}, body: "" });

      expect(res.status).toBe(405);
    });
  });

  describe("GET /console/{asset}", () => {
    it.for([
      ...modules.map((name) => [`/console/${name}`, name, "text/javascript; charset=utf-8"]),
      ["/console/styles.css", "styles.css", "text/css; charset=utf-8"],
    ])("returns %s with its content type", async ([path, name, type]) => {
      const res = await get(path);

      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe(type);
      expect(res.body).toBe(file(name));
    });

    it("returns every module the page imports, from app.js down", async () => {
      const seen = new Set<string>();
      const visit = async (name: string): Promise<void> => {
        if (seen.has(name)) return;
        seen.add(name);
        const res = await get(`/console/${name}`);
        expect(res.status, name).toBe(200);
        for (const [, imported] of res.body.matchAll(/^import [^;]+ from "\.\/([\w-]+\.js)";$/gm)) await visit(imported);
      };
      await visit("app.js");
      expect([...seen].sort()).toEqual([...modules].sort());
    });

    it("throws when the asset does not exist (404)", async () => {
      const res = await get("/console/secrets.json");

      expect(res.status).toBe(404);
    });
  });

  describe("static files", () => {
    it.for(["index.html", ...modules, "styles.css"])("%s names no other origin", (name) => {
      expect(file(name)).not.toMatch(/(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    });

    it("index.html has no inline script, style or event handler, which the policy would block", () => {
      const html = file("index.html");

      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
      expect(html).not.toMatch(/<style\b/i);
      expect(html).not.toMatch(/\sstyle=/i);
      expect(html).not.toMatch(/\son[a-z]+=/i);
    });

    it("index.html labels every input and text area", () => {
      const html = file("index.html");
      const ids = [...html.matchAll(/<(?:input|textarea)\b[^>]*\bid="([^"]+)"/g)].map((m) => m[1]);

      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) expect(html).toContain(`<label for="${id}"`);
    });
  });
});
