import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../lib/config/config.js";
import { type LocalServer, startLocalServer } from "../../lib/local/local-server.js";
import { silentLogger } from "../../lib/logger.js";
import { runExample, shellExamples } from "../../scripts/readme-examples.js";
import { mongoUri } from "../support/mongo.js";

/**
 * A newcomer's path as a test: every shell example of the README runs as written against a local
 * server (the offline model, the embedded database), from the repository's root, with the token
 * CLI's own `.local/` keys, and stops at an unset variable or an HTTP error.
 */

const ROOT = resolve(import.meta.dirname, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
/** Other pages whose shell examples a newcomer runs against the local server as they are. */
const DOCS_WITH_EXAMPLES = ["docs/api.md"];

describe("README shell examples", { timeout: 120_000 }, () => {
  let server: LocalServer;
  beforeAll(async () => {
    const config = loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: `readme_${randomUUID().slice(0, 8)}` });
    server = await startLocalServer(config, { port: 0, localDir: join(ROOT, ".local"), app: { logger: silentLogger } });
  });
  afterAll(() => server?.close());

  const examples = shellExamples(README);

  it("returns at least the curl and the streaming examples to run, and a reason for each it skips", () => {
    expect(examples.filter((example) => !example.notRun).length).toBeGreaterThanOrEqual(2);
    expect(examples.filter((example) => example.notRun !== undefined && example.notRun.trim() === "")).toEqual([]);
  });

  for (const example of examples.filter((e) => !e.notRun)) {
    it(`runs README.md:${example.line} as written`, async () => {
      const { code, output } = await runExample(example.code, new URL(server.url), ROOT);
      expect({ code, output }).toMatchObject({ code: 0 });
      expect(output).not.toMatch(/"error":\{"code"/);
    });
  }

  for (const page of DOCS_WITH_EXAMPLES) {
    const pageExamples = shellExamples(readFileSync(join(ROOT, page), "utf8"));
    it(`returns ${page}'s examples, and a reason for each it skips`, () => {
      expect(pageExamples.filter((example) => !example.notRun).length).toBeGreaterThanOrEqual(1);
      expect(pageExamples.filter((example) => example.notRun !== undefined && example.notRun.trim() === "")).toEqual([]);
    });
    for (const example of pageExamples.filter((e) => !e.notRun)) {
      it(`runs ${page}:${example.line} as written`, async () => {
        const { code, output } = await runExample(example.code, new URL(server.url), ROOT);
        expect({ code, output }).toMatchObject({ code: 0 });
        expect(output).not.toMatch(/"error":\{"code"/);
      });
    }
  }

  it("fails an example that uses a variable nothing set (the streaming example before it set its own)", async () => {
    const stale = 'curl -sN localhost:3000/v1/conversations/$CONVERSATION/turns/$TURN/events -H "authorization: Bearer $TOKEN"';
    expect((await runExample(stale, new URL(server.url), ROOT)).code).not.toBe(0);
  });

  it("fails an example whose request the server answers with an error", async () => {
    const missing = "curl -s localhost:3000/v1/conversations/nope";
    const { code, output } = await runExample(missing, new URL(server.url), ROOT);
    expect(code).not.toBe(0);
    expect(output).toContain("unauthorized");
  });
});

describe("shellExamples", () => {
  it("returns each bash block with its line, and the reason of one marked not run", () => {
    const text = ["# T", "```bash", "echo a", "```", "<!-- not run: needs a key -->", "```bash", "echo b", "```", "```text", "x", "```"].join("\n");
    expect(shellExamples(text)).toEqual([
      { line: 2, code: "echo a" },
      { line: 6, code: "echo b", notRun: "needs a key" },
    ]);
  });
});
