import { z } from "zod";
import { ToolError } from "../../lib/errors.js";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { ArtifactStore } from "../../lib/store/artifact-store.js";
import {
  createReadToolOutputTool,
  DEFAULT_READ_LINE_COUNT,
  DEFAULT_READ_MAX_TOKENS,
  READ_TOOL_OUTPUT_NAME,
  readableLines,
} from "../../lib/tools/read-tool-output.js";
import type { ToolContext } from "../../lib/tools/tool.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";
import { apiPrincipal, slackPrincipal } from "../../lib/auth/principal.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { MAX_GROWTH, workGrowth } from "../support/linear-work.js";

const reader = apiPrincipal("u1");
const ctx: ToolContext = {
  conversationId: "conv-read",
  turnId: "turn-2",
  toolCallId: "call-read",
  caller: { principal: reader, roles: [] },
  mayUse: () => true,
};

const { artifacts } = useStoreFixture("read_tool", (db) => ({ artifacts: new ArtifactStore(db) })).stores;
const tool = createReadToolOutputTool(artifacts);

let sequence = 0;
async function store(content: string, conversationId = ctx.conversationId): Promise<string> {
  sequence += 1;
  const artifact = { createdBy: reader, turnId: "turn-1", toolCallId: `call-${sequence}`, toolName: "sql_query", content };
  const ref = await artifacts.put(artifact, heldFence(conversationId));
  return ref.handle;
}

function report(lines: number): string {
  return Array.from(
    { length: lines },
    (_, i) => `row ${i + 1} | customer-${i + 1} | region ${["EMEA", "APAC", "NA"][i % 3]} | revenue ${(i * 91.3).toFixed(2)}`,
  ).join("\n");
}

/** The numbered lines of an answer, by number. */
function numbered(answer: string): Map<number, string> {
  const lines = new Map<number, string>();
  for (const line of answer.split("\n")) {
    const match = /^(\d+): (.*)$/.exec(line);
    if (match) lines.set(Number(match[1]), match[2]);
  }
  return lines;
}

describe("createReadToolOutputTool", () => {
  describe("definition", () => {
    it("returns a side-effect-free tool named read_tool_output", () => {
      expect(tool.name).toBe(READ_TOOL_OUTPUT_NAME);
      expect(tool.sideEffects).toBe(false);
    });

    it("has a schema that rejects a zero startLine, a zero lineCount and an empty search", () => {
      expect(tool.schema.safeParse({ handle: "art_x", startLine: 0 }).success).toBe(false);
      expect(tool.schema.safeParse({ handle: "art_x", lineCount: 0 }).success).toBe(false);
      expect(tool.schema.safeParse({ handle: "art_x", search: "" }).success).toBe(false);
      expect(tool.schema.safeParse({ handle: "art_x", startLine: 3, lineCount: 10, search: "acme", maxMatches: 5 }).success).toBe(true);
    });
  });

  describe("run", () => {
    it("returns the first lines with their numbers, the output's size and how to read on", async () => {
      const content = report(500);
      const handle = await store(content);
      const answer = await tool.run({ handle, lineCount: 10 }, ctx);
      expect(answer.split("\n")[0]).toContain(`${handle} (output of sql_query, 500 lines`);
      expect([...numbered(answer).entries()]).toEqual(
        content
          .split("\n")
          .slice(0, 10)
          .map((text, i) => [i + 1, text]),
      );
      expect(answer).toContain("Next part: startLine=11.");
    });

    it("returns exactly the requested line range", async () => {
      const content = report(100);
      const handle = await store(content);
      const lines = numbered(await tool.run({ handle, startLine: 40, lineCount: 5 }, ctx));
      expect([...lines.keys()]).toEqual([40, 41, 42, 43, 44]);
      expect(lines.get(40)).toBe(content.split("\n")[39]);
    });

    it("returns the default number of lines when lineCount is not given and they fit", async () => {
      const handle = await store(Array.from({ length: 1_000 }, (_, i) => String(i)).join("\n"));
      const answer = await tool.run({ handle }, ctx);
      expect(numbered(answer).size).toBe(DEFAULT_READ_LINE_COUNT);
      expect(answer).toContain(`Next part: startLine=${DEFAULT_READ_LINE_COUNT + 1}.`);
    });

    it("says the output ended when the range reaches the last line", async () => {
      const handle = await store(report(30));
      const answer = await tool.run({ handle, startLine: 25 }, ctx);
      expect([...numbered(answer).keys()]).toEqual([25, 26, 27, 28, 29, 30]);
      expect(answer.endsWith("[End of output.]")).toBe(true);
    });

    it("returns parts within the token limit that, followed to the end, cover every line once", async () => {
      const content = report(3_000);
      const handle = await store(content);
      const seen = new Map<number, string>();
      let startLine = 1;
      let calls = 0;
      for (;;) {
        const answer = await tool.run({ handle, startLine, lineCount: 2_000 }, ctx);
        calls += 1;
        expect(countTextTokens(answer)).toBeLessThanOrEqual(DEFAULT_READ_MAX_TOKENS);
        for (const [number, text] of numbered(answer)) {
          expect(seen.has(number)).toBe(false);
          seen.set(number, text);
        }
        const next = /startLine=(\d+)\.\]$/.exec(answer);
        if (!next) break;
        startLine = Number(next[1]);
      }
      expect(calls).toBeGreaterThan(10);
      expect([...seen.values()]).toEqual(content.split("\n"));
    });

    it("cuts a single line that alone is over the token limit, staying within it", async () => {
      const wide = createReadToolOutputTool(artifacts, { wrapChars: 100_000 });
      const handle = await store(`${"one very long line of words ".repeat(1_000)}\nsecond line`);
      const answer = await wide.run({ handle }, ctx);
      expect(countTextTokens(answer)).toBeLessThanOrEqual(DEFAULT_READ_MAX_TOKENS);
      expect(numbered(answer).get(1)?.endsWith("…")).toBe(true);
      expect(answer).toContain("Next part: startLine=2.");
    });

    it("returns the lines containing the search text, case-insensitively, with their numbers", async () => {
      const content = ["alpha", "ACME Corp, EMEA", "beta", "acme ltd", "gamma", "Acme"].join("\n");
      const handle = await store(content);
      const answer = await tool.run({ handle, search: "aCmE" }, ctx);
      expect([...numbered(answer).entries()]).toEqual([
        [2, "ACME Corp, EMEA"],
        [4, "acme ltd"],
        [6, "Acme"],
      ]);
      expect(answer).toContain("3 matching line(s); search complete.");
    });

    it("stops at maxMatches and says where the next search starts", async () => {
      const handle = await store(report(300));
      const first = await tool.run({ handle, search: "EMEA", maxMatches: 4 }, ctx);
      expect([...numbered(first).keys()]).toEqual([1, 4, 7, 10]);
      expect(first).toContain("same search with startLine=13.");
      const next = await tool.run({ handle, search: "EMEA", maxMatches: 2, startLine: 13 }, ctx);
      expect([...numbered(next).keys()]).toEqual([13, 16]);
    });

    it("searches only the given line range", async () => {
      const handle = await store(report(300));
      const answer = await tool.run({ handle, search: "APAC", startLine: 100, lineCount: 10 }, ctx);
      expect([...numbered(answer).keys()]).toEqual([101, 104, 107]);
    });

    it("says so when no line matches", async () => {
      const handle = await store(report(50));
      const answer = await tool.run({ handle, search: "no such customer" }, ctx);
      expect(numbered(answer).size).toBe(0);
      expect(answer).toContain("[No line matches.]");
    });

    it("reads a JSON array one element per line", async () => {
      const items = Array.from({ length: 40 }, (_, i) => ({ id: i + 1, name: `customer ${i + 1}` }));
      const handle = await store(JSON.stringify(items));
      const lines = numbered(await tool.run({ handle, startLine: 7, lineCount: 2 }, ctx));
      expect(JSON.parse(lines.get(7)!)).toEqual(items[6]);
      expect(JSON.parse(lines.get(8)!)).toEqual(items[7]);
    });

    it("throws a ToolError for an unknown handle", async () => {
      const error = await tool.run({ handle: "art_000000000000000000000000" }, ctx).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect(error).toMatchObject({ toolName: READ_TOOL_OUTPUT_NAME });
    });

    it("throws a ToolError for a handle of another conversation", async () => {
      const handle = await store(report(10), "conv-other");
      await expect(tool.run({ handle }, ctx)).rejects.toBeInstanceOf(ToolError);
      await expect(tool.run({ handle }, { ...ctx, conversationId: "conv-other" })).resolves.toContain("1: row 1");
    });

    it("throws a ToolError for an output made for a principal of another issuer, even in the same conversation", async () => {
      sequence += 1;
      const { handle } = await artifacts.put(
        {
          createdBy: slackPrincipal("T0LOCAL", "U0ALICE"),
          turnId: "turn-1",
          toolCallId: `call-${sequence}`,
          toolName: "sql_query",
          content: report(3),
        },
        heldFence(ctx.conversationId),
      );
      const asApiToken = { ...ctx, caller: { principal: apiPrincipal("U0ALICE", "T0LOCAL"), roles: [] } };
      await expect(tool.run({ handle }, asApiToken)).rejects.toBeInstanceOf(ToolError);
      await expect(tool.run({ handle }, { ...ctx, caller: { principal: slackPrincipal("T0LOCAL", "U0BOB"), roles: [] } })).resolves.toContain("1: row 1");
    });

    it("throws a ToolError when the caller may not use the tool that produced the output", async () => {
      const handle = await store(report(5));
      const error = await tool.run({ handle }, { ...ctx, mayUse: (name) => name !== "sql_query" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).message).toContain("not permitted to read the output of sql_query");
    });

    it("returns an output through the registry only to callers with the producing tool's role", async () => {
      const handle = await store(report(5));
      const sqlQuery = { name: "sql_query", description: "stands in", schema: z.object({}), sideEffects: false, run: async () => "" };
      const registry = new ToolRegistry([sqlQuery, tool], { roles: { sql_query: ["analyst"] } });
      const call = { id: "call-gated", name: READ_TOOL_OUTPUT_NAME, args: { handle } };
      const scope = { conversationId: ctx.conversationId, turnId: "turn-3" };
      const guest = await registry.execute(call, { ...scope, caller: { principal: reader, roles: [] } });
      const analyst = await registry.execute(call, { ...scope, caller: { principal: reader, roles: ["analyst"] } });
      expect(guest).toMatchObject({ status: "error", content: expect.stringContaining("not permitted to read the output of sql_query") });
      expect(analyst).toMatchObject({ status: "success", content: expect.stringContaining("1: row 1") });
    });

    it("throws a ToolError saying why for an output fetched with another user's own credentials, to a colleague holding the tool's role", async () => {
      sequence += 1;
      const anna = slackPrincipal("T0LOCAL", "U0ANNA");
      const { handle } = await artifacts.put(
        {
          createdBy: anna,
          turnId: "turn-1",
          toolCallId: `call-${sequence}`,
          toolName: "crm_lookup",
          content: report(3),
          provenance: [{ tool: "crm_lookup", roles: ["sales"], user: anna }],
        },
        heldFence(ctx.conversationId),
      );
      const colleague = { ...ctx, caller: { principal: slackPrincipal("T0LOCAL", "U0CARL"), roles: ["sales"] } };
      const error = await tool.run({ handle }, colleague).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).message).toContain("fetched with another user's own credentials");
      expect((error as ToolError).message).not.toContain("row 1");
      const own: unknown[] = [];
      await expect(tool.run({ handle }, { ...ctx, caller: { principal: anna, roles: ["sales"] }, derivedFrom: (p) => own.push(p) })).resolves.toContain(
        "1: row 1",
      );
      // What the read returns repeats the artifact: it carries the artifact's provenance.
      expect(own).toEqual([[{ tool: "crm_lookup", roles: ["sales"], user: anna }]]);
    });

    it("throws a ToolError for an output whose recorded roles the caller lacks, though the tool is open to them now", async () => {
      sequence += 1;
      const { handle } = await artifacts.put(
        {
          createdBy: reader,
          turnId: "turn-1",
          toolCallId: `call-${sequence}`,
          toolName: "sql_query",
          content: report(3),
          provenance: [{ tool: "sql_query", roles: ["analyst"] }],
        },
        heldFence(ctx.conversationId),
      );
      const error = await tool.run({ handle }, ctx).catch((e: unknown) => e);
      expect((error as ToolError).message).toContain("needs the role analyst");
    });

    it("throws a ToolError naming the line count when startLine is past the end", async () => {
      const handle = await store(report(12));
      const error = await tool.run({ handle, startLine: 13 }, ctx).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).message).toContain("12 lines");
    });
  });
});

describe("readableLines", () => {
  it("returns long lines wrapped at the given width", () => {
    expect(readableLines(`${"a".repeat(25)}\nb`, 10)).toEqual(["a".repeat(10), "a".repeat(10), "a".repeat(5), "b"]);
  });

  it("returns a one-line JSON object pretty-printed", () => {
    expect(readableLines('{"a":1,"b":[2]}')).toEqual(["{", '  "a": 1,', '  "b": [', "    2", "  ]", "}"]);
  });

  it("returns text that only looks like JSON unchanged", () => {
    expect(readableLines("[not json]\nsecond")).toEqual(["[not json]", "second"]);
  });

  it("returns deeply nested JSON as its text, so its lines grow linearly with it, not with depth times length as indented", () => {
    // Indenting n nested objects writes about n² spaces: 18 kB became 18 MB of lines.
    const nested = { name: "nested objects", text: (chars: number) => `${'{"a":'.repeat(Math.floor(chars / 6))}1${"}".repeat(Math.floor(chars / 6))}` };
    expect(workGrowth((text) => readableLines(text), nested, 16_000)).toBeLessThan(MAX_GROWTH);
    expect(readableLines(nested.text(600), 1_000)).toEqual([nested.text(600)]);
  });
});
