import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { SQLITE_WASM_PACKAGE } from "../../lib/tools/sql/sqlite-wasm.js";
import { Template } from "aws-cdk-lib/assertions";
import { startConverseEndpoint } from "../support/converse-endpoint.js";
import { build } from "esbuild";
import { MODULE_REPLACEMENTS } from "../../infra/bundling/bundle-plugins.js";
import {
  BUNDLE_FILE,
  bundleOptions,
  ESM_REQUIRE_BANNER,
  MONGODB_OPTIONAL_MODULES,
  PROJECT_ROOT,
  writeCorpus,
  writeSqliteWasm,
  writeTokenizerData,
} from "../../infra/bundling/bundling.js";
import { TOKENIZER_DATA_FILE } from "../../infra/bundling/cl100k-base.js";
import { Client, LANGSMITH_TRACING_VARIABLES } from "../../infra/bundling/langsmith-client.js";
import * as source from "./support/bundle-probe.js";
import { buildStack } from "./synth.js";

/**
 * The worker's code budget (index.mjs, minified): the issue's 1.5 MB, plus X-Ray tracing
 * (Powertools Tracer and the X-Ray SDK: +122 KB, import 1.12×, import + first invocation 1.13× in
 * `npm run bench:cold-start`, against the same worker with the tracer left out), plus 10 KB for what
 * later work added: streaming (about 9 KB), the view's per-message dispositions (1.9 KB) and the tool
 * settings' descriptions in the settings registry (2.3 KB), plus 12 KB for zod's `fromJSONSchema`,
 * with which an approval's edit is checked against its recorded schema (docs/approvals.md, "Edits";
 * the worker carries it with the app, though only the api and the webhooks take decisions), plus 8 KB
 * for what the outside-in audits of the 2026-12-01 stop added (bounded Power BI reads, Athena's refused
 * table functions, cut offloads, Slack's escaping, the deleted channel keys): 1,755,573 bytes then.
 * Then 1,806,062 bytes with this round's issues merged (the working set and its archive, turn recovery
 * and the MongoDB turn queue, budgets and rate limits, trust marks and approval context, the turn digest,
 * the busy-model retry policy): 50 KB more. Then 1,900,269 with the MCP client (docs/mcp.md): the SDK's
 * client and Streamable HTTP transport (70 KB), pkce-challenge and eventsource-parser (5 KB), lib/mcp
 * (13 KB), with the SDK's Ajv left out (136 KB, `ZodJsonSchemaValidator` instead): 94 KB more, 0.09 MiB.
 * Then OpenTelemetry's API for one turn, one trace (docs/operations.md, "Tracing"): `@opentelemetry/api`
 * 9,714 bytes, lib/observability/tracing.ts 3,225, the wrapped calls and the queue hop about 1.8 KB; 15 KB more
 * budget. The SDK and exporters are local mode's only (the ADOT layer brings its own): the test below holds them out.
 * Then per-user MCP OAuth in AWS (docs/mcp-oauth.md): lib/mcp/oauth (token store, provider, envelope
 * cipher, KMS key source), 7,748 bytes more (1,929,000), the KMS client taken from the runtime's AWS SDK:
 * budget raised by that and 4 KiB. Then 1,937,619 with the view's ledger of time anchors, the Teams guest
 * check and the settings they brought (their descriptions ship in lib/config): 2,007 bytes, and 4 KiB more.
 * Then the MCP tenant boundary (the egress fetch and address ranges, tenant-scoped secrets, sign-in
 * confirmation): 12,426 bytes (1,938,467 to 1,950,893, `npx tsx scripts/bundle-size.ts worker` on the
 * tree before and after), and as much budget; the stream 12,821 and the api 13,065, likewise.
 * Then 1,948,604 with data sources that see the user (docs/security.md: Power BI identities, the
 * knowledge base filter, Athena roles per caller, the local row policy, their settings): 10,985 bytes more.
 */
/* Then 1,988,922 with this round's merges together (turn admission, failure codes and the outage retries,
 * the erasure and audit hooks, the standing ledger and whole outputs in recall, the settings they brought):
 * budget raised to that and 4 KiB (`npx vitest run test/infra/bundling.test.ts`). */
/* Then 1,993,262 with API conversation members and the one conversation check (issue 43/42/45: the runner's
 * check, the eraser's memberships, the MCP sign-in audit record): 4,353 bytes over 1,988,909 measured the same
 * way on the tree before (`npx tsx scripts/bundle-size.ts worker`): that and 4 KiB. */
/* Then 2,005,314 with the data boundary in shared threads (issue 43: provenance, withholding, lib/auth/data-visibility.ts):
 * 5,256 bytes over 2,000,058 measured the same way on main at f73b46e: that and 4 KiB. */
/* Then 2,074,898 with contents encrypted at rest (issue 44, docs/security.md "Contents at rest"): the AWS Encryption
 * SDK's encrypt, decrypt, caching and raw AES packages without their ECDSA, bn.js, asn1.js and readable-stream parts
 * (bundle-plugins.ts), and lib/crypto: 85,976 bytes (`npx tsx scripts/bundle-size.ts worker`); that and 4 KiB.
 * Then 2,092,668 with the recall term keys, the sealed events, titles, contexts, follow-ups and queue jobs, the
 * tenant shred in erasure, and main at 9fe5c3b merged: 99,406 bytes over main's 1,993,262 (1842364). That and 4 KiB. */
/* Then 2,100,456 with this round's branches merged together (the data boundary, members, the runner's parts, the
 * sufficiency rules and contents at rest; `npx tsx scripts/bundle-size.ts`): that and 4 KiB. */
/* Then 2,118,119 with contents sealed in AWS (issue 44, docs/security.md "Contents at rest in AWS"): the functions
 * now build their tenants' KMS keys (`KmsTenantKeys`, the Encryption SDK's KMS keyring, functions/shared/content-keys.ts),
 * 17,272 bytes over 2,100,847 on the tree before (`npx tsx scripts/bundle-size.ts worker`): that and 4 KiB. */
/* Then 8,912 bytes more with key rotation on a schedule and re-encryption (issue 44, "Rotation": the key maintenance the
 * worker's schedule runs, the resealer and its walkers): 2,109,759 against 2,100,847 at f9af835 (`npx tsx scripts/bundle-size.ts worker`). */
/* Then 2,110,928 with the checkpoints sealed (issue 44: lib/store/checkpoint/checkpoint-contents.ts, checkpoint-resealer.ts,
 * checkpoint-export.ts): 10,081 bytes over 2,100,847 on the tree before (`npx tsx scripts/bundle-size.ts worker`): that and 4 KiB. */
/* Then 2,105,129 with idempotency records, approvals and provenance sealed (issue 44, docs/security.md "Idempotency
 * records", "Approvals", "Provenance"): 4,282 bytes over 2,100,847 at f9af835 (`npx tsx scripts/bundle-size.ts worker`
 * on both trees); that and 4 KiB. */
/* Then 2,141,818 with this round's contents-at-rest branches merged together (AWS keys, rotation, the checkpoints,
 * idempotency records, approvals and provenance sealed; `npx tsx scripts/bundle-size.ts`): that and 4 KiB. */
const WORKER_BUNDLE_BUDGET_BYTES = 2_141_818 + 4 * 1024;
/**
 * The streaming function's code budget: the api's code and what it adds to verify tokens itself,
 * jose's JWT verification and remote key set with the OpenID metadata reader (22 KB), with some
 * room. Measured: 1,771,125 bytes (the largest asset's index.mjs in cdk.out after `npx cdk synth`); then
 * 1,798,675 with the Agent Protocol's routes (docs/agent-protocol.md, 27 KB), whose runs stream here;
 * then 1,857,703 with the rest of this round (the worker's additions above, the admin routes, stream caps);
 * then 1,955,084 with the MCP client and its admin routes (97 KB, as the worker's above): 0.09 MiB more;
 * then OpenTelemetry's API and the spans (as the worker's, 14.7 KB): 15 KB more budget;
 * then per-user MCP OAuth (as the worker's): 7,747 bytes more (1,983,533), budget raised by that and 4 KiB;
 * then 1,991,561 with the ledger of time anchors and the guest check (as the worker's): 3,521 bytes and 4 KiB more;
 * then 1,996,224 with the admin scope (operators and tenant admins), the tenant-claim check, the
 * complete-answer check and the follower's error report: 4,663 bytes, and 4 KiB more;
 * then the MCP tenant boundary (as the worker's): 12,821 bytes;
 * then 2,002,817 with data sources that see the user (as the worker's): 11,256 bytes more.
 */
/* Then 2,057,362 with this round's merges together (as the worker's, and the lifecycle routes): that and 4 KiB. */
/* Then 2,066,020 with API conversation members (the member routes and schemas, the one conversation check, a
 * member's stream re-checked): 8,675 bytes over 2,057,345 before (`npx tsx scripts/bundle-size.ts stream`): that and 4 KiB. */
/* Then 2,079,814 with the data boundary in shared threads (as the worker's): 6,227 bytes over 2,073,587 at f73b46e; that and 4 KiB. */
/* Then 2,166,699 with contents encrypted at rest (as the worker's, main at 9fe5c3b merged): 100,679 bytes over main's 2,066,020; that and 4 KiB. */
/* Then 2,175,455 with this round's branches merged together (the data boundary, members, the runner's parts, the
 * sufficiency rules and contents at rest; `npx tsx scripts/bundle-size.ts`): that and 4 KiB. */
/* Then 2,193,341 with contents sealed in AWS (as the worker's): 17,285 bytes over 2,176,056 before; that and 4 KiB. */
/* Then 11,720 bytes more with key rotation (as the worker's, and the content-key routes and their OpenAPI operations):
 * 2,187,776 against 2,176,056 at f9af835. */
/* Then 2,187,382 with the checkpoints sealed (as the worker's): 11,326 bytes over 2,176,056 on the tree before; that and 4 KiB. */
/* Then 2,179,896 with idempotency records, approvals and provenance sealed (as the worker's): 3,840 bytes over 2,176,056
 * at f9af835 (`npx tsx scripts/bundle-size.ts stream` on both trees); that and 4 KiB. */
/* Then 2,220,641 with this round's contents-at-rest branches merged together (AWS keys, rotation, the checkpoints,
 * idempotency records, approvals and provenance sealed; `npx tsx scripts/bundle-size.ts`): that and 4 KiB. */
const STREAM_BUNDLE_BUDGET_BYTES = 2_220_641 + 4 * 1024;
/**
 * The api function's code budget: 1,839,572 bytes without the MCP endpoint, then 1,950,369 with it
 * and the MCP sign-in callback (docs/bundling.md, "The MCP endpoint": the MCP SDK's server and
 * transport, 108 KB, its Ajv and zod 3 converter replaced), with 10 KB of room; then
 * 2,010,748 with the MCP client for tenants' tools and its admin routes (they share the SDK's modules with
 * the endpoint) and the request span of one turn, one trace: 1.93 MiB; then 2,010,960 with per-user
 * MCP OAuth for its turns (it carried lib/mcp/oauth for the callback already): 212 bytes more, and as much budget;
 * then 2,030,244 with data sources that see the user (as the worker's, about 11 KB): 10,985 bytes more budget.
 */
/* Then 2,084,986 with this round's merges together (as the stream's): that and 4 KiB. */
/* Then 2,093,630 with API conversation members (as the stream's): 8,666 bytes over 2,084,964 before
 * (`npx tsx scripts/bundle-size.ts api`): that and 4 KiB. */
/* Then 2,107,487 with the data boundary in shared threads (as the worker's, and the inspector's withholding): 6,228 bytes over 2,101,259 at f73b46e. */
/* Then 2,194,374 with contents encrypted at rest (as the worker's, main at 9fe5c3b merged): 100,744 bytes over main's 2,093,630; that and 4 KiB. */
/* Then 2,203,125 with this round's branches merged together (the data boundary, members, the runner's parts, the
 * sufficiency rules and contents at rest; `npx tsx scripts/bundle-size.ts`): that and 4 KiB. */
/* Then 2,221,011 with contents sealed in AWS (as the worker's): 17,285 bytes over 2,203,726 before; that and 4 KiB. */
/* Then 11,720 bytes more with key rotation (as the stream's): 2,215,446 against 2,203,726 at f9af835. */
/* Then 2,215,052 with the checkpoints sealed (as the worker's): 11,326 bytes over 2,203,726 on the tree before; that and 4 KiB. */
/* Then 2,207,566 with idempotency records, approvals and provenance sealed (as the worker's): 3,840 bytes over 2,203,726
 * at f9af835 (`npx tsx scripts/bundle-size.ts api` on both trees); that and 4 KiB. */
/* Then 2,248,312 with this round's contents-at-rest branches merged together (AWS keys, rotation, the checkpoints,
 * idempotency records, approvals and provenance sealed; `npx tsx scripts/bundle-size.ts`): that and 4 KiB. */
const API_BUNDLE_BUDGET_BYTES = 2_248_312 + 4 * 1024;
/**
 * The webhooks' code budget (slack and teams are one bundle): verify, claim, enqueue and decide
 * approvals, with the driver and the Slack Web API client for the edit modal, but no LangChain, graph
 * or tools. Measured: 1,012,975 bytes (docs/bundling.md, "What ships now"); then 1,048,995 with this
 * round's settings (lib/config, 33 KB with the descriptions of the MCP, MCP OAuth, tracing and guest
 * settings), OpenTelemetry's API for the request span (9.7 KB) and the Teams guest check: 1 MiB + 8 KiB;
 * then 1,058,045 with this round's settings and the turn failure codes: 1 MiB + 12 KiB;
 * then 1,064,384 with contents encrypted at rest (main at 9fe5c3b merged), which the webhooks do without the
 * Encryption SDK (they read and write no sealed field; docs/security.md, "What the webhooks store"): the stores'
 * cipher interface, the encryption settings and errors, 4,048 bytes over main's 1,060,336: 1 MiB + 16 KiB.
 * Then 1,064,846 with the content keys' deployment setting and tag names (they ship in lib/config): 346 bytes over
 * 1,064,500 before (`npx tsx scripts/bundle-size.ts slack`); the budget unchanged, 114 bytes left;
 * then 1,066,418 with approvals and provenance sealed, still without the SDK (docs/security.md, "How the webhooks take
 * approvals without clear contents": sealed fields withheld, the turn's status read alone, an edit's arguments handed to
 * the worker): 1,918 bytes over 1,064,500 at f9af835 (`npx tsx scripts/bundle-size.ts slack` on both trees): 1 MiB + 20 KiB;
 * 1,067,120 with this round's contents-at-rest branches merged together.
 */
const WEBHOOK_BUNDLE_BUDGET_BYTES = 1024 * 1024 + 20 * 1024;

/** Matches a `require("name")` call as it stays in the minified code for a module left out of the bundle. */
const requireOf = (name: string) => new RegExp(`[\\w$]+\\(["']${name.replace(/[/@.]/g, "\\$&")}["']\\)`);

describe("ThreadwiseStack bundling", () => {
  // One synth with real esbuild bundling (local, no Docker), shared by the tests below.
  const { app, stack } = buildStack({ bundle: true });
  const template = Template.fromStack(stack);
  const assemblyDir = app.synth().directory;

  /** The bundle directory of the function with this name, found through its S3 key (the asset hash). */
  function bundleDir(functionName: string): string {
    const [fn] = Object.values(template.findResources("AWS::Lambda::Function", { Properties: { FunctionName: functionName } }));
    const key = fn.Properties.Code.S3Key as string;
    return join(assemblyDir, `asset.${key.replace(/\.zip$/, "")}`);
  }

  const workerCode = () => readFileSync(join(bundleDir("dev-threadwise-worker"), BUNDLE_FILE), "utf8");

  describe("function assets", () => {
    it.each(["api", "worker", "slack", "teams", "stream"])("returns an ESM bundle with a source map for %s", (name) => {
      const dir = bundleDir(`dev-threadwise-${name}`);
      const code = readFileSync(join(dir, BUNDLE_FILE), "utf8");
      expect(code.startsWith(ESM_REQUIRE_BANNER)).toBe(true);
      expect(/export\s*\{[^}]*\bas handler\b|export\s*\{[^}]*\bhandler\b/.test(code)).toBe(true);
      expect(existsSync(join(dir, `${BUNDLE_FILE}.map`))).toBe(true);
    });

    it("returns a stream bundle within its budget (2,008,478 bytes)", () => {
      expect(statSync(join(bundleDir("dev-threadwise-stream"), BUNDLE_FILE)).size).toBeLessThanOrEqual(STREAM_BUNDLE_BUDGET_BYTES);
    });

    it("returns an api bundle within its budget (2,037,028 bytes)", () => {
      expect(statSync(join(bundleDir("dev-threadwise-api"), BUNDLE_FILE)).size).toBeLessThanOrEqual(API_BUNDLE_BUDGET_BYTES);
    });

    it.each(["slack", "teams"])("returns a %s bundle within the webhooks' 1 MiB + 16 KiB budget", (name) => {
      expect(statSync(join(bundleDir(`dev-threadwise-${name}`), BUNDLE_FILE)).size).toBeLessThanOrEqual(WEBHOOK_BUNDLE_BUDGET_BYTES);
    });

    it("returns a worker bundle within its budget (1,954,141 bytes)", () => {
      expect(statSync(join(bundleDir("dev-threadwise-worker"), BUNDLE_FILE)).size).toBeLessThanOrEqual(WORKER_BUNDLE_BUDGET_BYTES);
    });

    it.each(["api", "worker", "stream", "slack"])("returns a %s bundle with OpenTelemetry's API but none of its SDK or exporters", (name) => {
      const map = JSON.parse(readFileSync(join(bundleDir(`dev-threadwise-${name}`), `${BUNDLE_FILE}.map`), "utf8")) as { sources: string[] };
      const otel = map.sources.filter((path) => path.includes("node_modules/@opentelemetry/"));
      expect(otel.filter((path) => !path.includes("node_modules/@opentelemetry/api/"))).toEqual([]);
      if (name !== "slack") expect(otel.length).toBeGreaterThan(0);
    });

    it("returns the worker's tokenizer ranks as a data file beside the bundle, not inside it", () => {
      const dir = bundleDir("dev-threadwise-worker");
      const ranks = JSON.parse(readFileSync(join(dir, TOKENIZER_DATA_FILE), "utf8")) as { bpe_ranks: string };
      expect(ranks.bpe_ranks.length).toBeGreaterThan(500_000);
      expect(workerCode().includes(ranks.bpe_ranks.slice(0, 200))).toBe(false);
    });

    it("returns a worker bundle that leaves the driver's optional modules to require() at run time", () => {
      const code = workerCode();
      const required = MONGODB_OPTIONAL_MODULES.filter((name) => requireOf(name).test(code));
      expect(required).toEqual(expect.arrayContaining(["kerberos", "snappy", "@mongodb-js/zstd", "mongodb-client-encryption"]));
    });

    it("returns a worker bundle that requires the runtime's AWS SDK instead of containing it", () => {
      const code = workerCode();
      expect(
        ["@aws-sdk/client-sqs", "@aws-sdk/client-secrets-manager", "@aws-sdk/client-bedrock-runtime"].filter((name) => !requireOf(name).test(code)),
      ).toEqual([]);
      // ESM imports would not find the runtime's copy, which is on NODE_PATH.
      expect(code).not.toMatch(/from\s*["']@(aws-sdk|smithy)\//);
      // A header name set inside the SDK's middleware, so in the code only if the SDK is.
      expect(code).not.toContain("x-amz-user-agent");
    });

    it.each(["api", "worker", "stream"])("returns SQLite's WebAssembly package and the handbook beside the %s bundle, not inside it", (name) => {
      const dir = bundleDir(`dev-threadwise-${name}`);
      const sqlite = join(dir, "node_modules", SQLITE_WASM_PACKAGE);
      expect(["package.json", "dist/node.mjs", "dist/sqlite3.wasm"].filter((file) => !existsSync(join(sqlite, file)))).toEqual([]);
      expect(existsSync(join(dir, "corpus", "discount-policy.md"))).toBe(true);
      // Defined in the package's entry, never named in our code.
      expect(readFileSync(join(dir, BUNDLE_FILE), "utf8").includes("sqlite3ApiBootstrap")).toBe(false);
    });

    it("returns a worker bundle that reaches MCP servers over Streamable HTTP but leaves stdio and Ajv out", () => {
      const code = workerCode();
      expect(code).toContain("mcp-session-id");
      // The stdio transport stays a run-time import (local mode only), its process spawner not bundled.
      expect(code).toContain('import("@modelcontextprotocol/sdk/client/stdio.js")');
      expect(code).not.toContain("HOMEDRIVE");
      expect(code).not.toContain("strictTypes");
    });

    it("returns a worker bundle without the code the replacements stand in for", () => {
      const code = workerCode();
      // zod's Spanish messages, LangSmith's REST client, the SAX parser, LangChain's fake chat models, the driver's GridFS, the OpenAI SDK.
      const markers = [
        "Entrada inválida",
        "/runs/multipart",
        "Unclosed root tag",
        "FakeListChatModel",
        "Cannot call abort() on a stream twice",
        "api.openai.com",
      ];
      for (const marker of markers) {
        expect(code).not.toContain(marker);
      }
    });
  });

  describe("webhook bundles", () => {
    it.each(["slack", "teams"])("returns a %s bundle without the AWS Encryption SDK", async (name) => {
      const dir = mkdtempSync(join(PROJECT_ROOT, "node_modules/.cache/tw-webhook-"));
      try {
        const { metafile } = await build({ ...bundleOptions(join(PROJECT_ROOT, "functions", `${name}.ts`), join(dir, BUNDLE_FILE)), metafile: true });
        const inputs = Object.keys(metafile.inputs);
        expect(inputs.some((input) => input.includes("lib/store/"))).toBe(true);
        expect(inputs.filter((input) => input.includes("@aws-crypto/") || input.includes("lib/crypto/field-cipher"))).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("bundleOptions", () => {
    // Under the project, so the bundle's require() finds the AWS SDK in node_modules as Lambda's finds the runtime's.
    mkdirSync(join(PROJECT_ROOT, "node_modules/.cache"), { recursive: true });
    const dir = mkdtempSync(join(PROJECT_ROOT, "node_modules/.cache/tw-bundle-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** The probe module bundled as the functions are, with the tokenizer data beside it. */
    async function bundledProbe(): Promise<typeof source> {
      const { metafile } = await build({
        ...bundleOptions(new URL("./support/bundle-probe.ts", import.meta.url).pathname, join(dir, BUNDLE_FILE)),
        metafile: true,
      });
      // Each replacement must have been used, or the probe would not test it. A package npm installed twice
      // (readable-stream under encrypt-node, decrypt-node and duplexify) is one replacement: named from node_modules on.
      const replaced = Object.keys(metafile.inputs).filter((input) =>
        MODULE_REPLACEMENTS.some(({ replacement }) =>
          "file" in replacement ? input.endsWith(replacement.file.split("/").slice(-2).join("/")) : input.startsWith("threadwise-replacement:"),
        ),
      );
      const replacements = [...new Set(replaced.map((input) => input.replace(/^.*node_modules[\\/]/, "")))];
      const distinct = new Set(MODULE_REPLACEMENTS.map(({ importPath, replacement }) => ("file" in replacement ? replacement.file : importPath)));
      expect(replacements.length).toBe(distinct.size);
      await writeTokenizerData(dir);
      writeSqliteWasm(dir);
      writeCorpus(dir);
      return (await import(pathToFileURL(join(dir, BUNDLE_FILE)).href)) as typeof source;
    }
    const probe = bundledProbe();

    it("returns the same token counts from a bundle as from the source", async () => {
      const text = "Threadwise keeps durable state and sends only what helps answer. Ünïcödé, code `x => x + 1`.";
      expect((await probe).countTextTokens(text)).toBe(source.countTextTokens(text));
    });

    it("returns a MongoDB client from a bundle as the source does, and a GridFS that says it was left out", async () => {
      expect(await source.mongoDriver()).toEqual({ client: true, gridFs: "constructed" });
      expect(await (await probe).mongoDriver()).toEqual({ client: true, gridFs: "GridFS is left out of the Lambda bundles" });
    });

    it("returns the same checkpointed turns from a bundle as from the source", async () => {
      const contents = ["My name is Ada.", "What is my name?"];
      expect(await (await probe).runTurns(contents)).toEqual(await source.runTurns(contents));
    });

    it("returns messages and prompt values revived from a checkpoint as the source does", async () => {
      const bundled = await (await probe).roundTrip();
      expect(bundled).toEqual(await source.roundTrip());
      expect(bundled).toMatchObject({ prompt: "Human: prompted" });
    });

    it("returns the same MCP tool list and calls from a bundle as from the source, the SDK's zod 3 converter replaced", async () => {
      const bundled = await (await probe).mcpTools();
      expect(bundled).toEqual(await source.mcpTools());
      expect(bundled).toMatchObject({ schema: { required: ["text"] }, called: [{ type: "text", text: "hi" }], refused: true });
    });

    it("returns a context variable carried into nested runnables", async () => {
      expect(await (await probe).contextVariable()).toBe("carried");
    });

    it("returns the same Bedrock answer through the runtime's AWS SDK as the source does", async () => {
      const endpoint = await startConverseEndpoint();
      const saved = { ...process.env };
      Object.assign(process.env, endpoint.environment);
      try {
        const bundled = await (await probe).bedrockAnswer("My name is Ada.");
        expect(bundled).toEqual(await source.bedrockAnswer("My name is Ada."));
        expect(endpoint.requests.length).toBe(2);
      } finally {
        process.env = saved;
        await endpoint.close();
      }
    });

    it("returns the sample tools' answers from a bundle, with SQLite loaded from beside it, as the source does", async () => {
      const bundled = await (await probe).sampleTools();
      const { sqlite, ...answers } = await source.sampleTools();
      expect(bundled).toEqual({ ...answers, sqlite: pathToFileURL(join(dir, "node_modules", SQLITE_WASM_PACKAGE, "dist/node.mjs")).href });
      expect(answers).toMatchObject({ rows: expect.arrayContaining([["West", expect.any(Number)]]), source: "discount-policy.md" });
      expect(sqlite).not.toBe(bundled.sqlite);
    });

    it("returns an MCP client with the product's validator from a bundle, where the SDK's Ajv default is left out", async () => {
      const bundled = (await probe).mcpClients();
      expect(bundled.withOwnValidator).toBe(true);
      expect(bundled.defaultValidator).toMatch(/left out of the Lambda bundles/);
      expect(source.mcpClients()).toEqual({ withOwnValidator: true, defaultValidator: "built" });
    });

    it("returns contents sealed by the source from a bundle, and the other way round (the Encryption SDK's left-out parts)", async () => {
      const keys = mkdtempSync(join(dir, "keys-"));
      // Past one 4 KiB frame, so frames' additional data (the 64-bit length the bn.js stand-in writes) is exercised.
      const text = `MARKER-probe ${"the quarterly numbers ".repeat(600)}`;
      const bundled = await probe;
      expect(await bundled.openContent(keys, await source.sealContent(keys, text))).toBe(text);
      expect(await source.openContent(keys, await bundled.sealContent(keys, text))).toBe(text);
    });

    it("returns zod's English messages, and z.compile parsing as the runtime parser does", async () => {
      const bundled = (await probe).zodMessages();
      expect(bundled).toEqual(source.zodMessages());
      expect(bundled).toMatchObject({ plain: [expect.stringMatching(/^name: Invalid input/), expect.any(String)] });
    });
  });
});

describe("LangSmith Client stand-in", () => {
  describe("constructor", () => {
    afterEach(() => {
      for (const name of LANGSMITH_TRACING_VARIABLES) delete process.env[name];
    });

    it("returns a client when tracing is off", () => {
      expect(new Client()).toBeInstanceOf(Client);
    });

    it("throws when tracing is switched on, naming the variable", () => {
      process.env.LANGSMITH_TRACING = "true";
      expect(() => new Client()).toThrow(/LANGSMITH_TRACING/);
    });
  });
});
