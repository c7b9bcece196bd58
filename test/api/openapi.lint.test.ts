import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../../lib/api/openapi.js";

/** Redocly CLI's own binary, run with its telemetry and update check off: it sends nothing anywhere. */
const REDOCLY = join(createRequire(import.meta.url).resolve("@redocly/cli/package.json"), "..", "bin", "cli.js");

interface LintResult {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; message: string }[];
}

const dir = mkdtempSync(join(tmpdir(), "threadwise-openapi-lint-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `redocly lint --extends recommended` of a document, as JSON. */
function lint(document: unknown, name: string): Promise<LintResult> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(document));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [REDOCLY, "lint", file, "--extends", "recommended", "--format", "json"],
      { env: { PATH: process.env.PATH ?? "", HOME: dir, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" }, timeout: 60_000 },
      (_error, stdout) => {
        try {
          resolve(JSON.parse(stdout) as LintResult);
        } catch (error) {
          reject(error);
        }
      },
    );
  });
}

describe("openApiDocument", { timeout: 90_000 }, () => {
  describe("under Redocly's recommended rules", () => {
    it("returns a document with no error and no warning (servers, a license, a 4xx on every operation)", async () => {
      const { totals, problems } = await lint(openApiDocument(), "threadwise");
      expect(problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(totals).toMatchObject({ errors: 0, warnings: 0 });
    });

    it("returns the problems the recommended rules find in a document without servers or a license (the lint can fail)", async () => {
      const { servers: _servers, ...document } = openApiDocument() as { servers: unknown; info: Record<string, unknown> };
      const { license: _license, ...info } = document.info;
      const { problems } = await lint({ ...document, info }, "bare");
      expect(problems.map((p) => p.ruleId).sort()).toEqual(["info-license", "no-empty-servers"]);
    });
  });
});
