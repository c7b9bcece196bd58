import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { ArtifactStore, DEFAULT_MAX_ARTIFACT_BYTES, DEFAULT_PREVIEW_CHARS } from "../../lib/store/artifact-store.js";
import { DEFAULT_OFFLOAD_TOKENS, offloadToolOutput } from "../../lib/tools/output-offload.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const { artifacts } = useStoreFixture("offload", (db) => ({ artifacts: new ArtifactStore(db) }), { clearBeforeEach: false }).stores;

const alice = apiPrincipal("alice");
const meta = (toolCallId: string) => ({ createdBy: alice, turnId: "turn-1", toolCallId, toolName: "sql_query", fence: heldFence("conv-offload") });

function rows(count: number): string {
  return Array.from({ length: count }, (_, i) => `${i + 1}\tcustomer ${i + 1}\t${(i * 37.5).toFixed(2)}\tEMEA`).join("\n");
}

describe("offloadToolOutput", () => {
  it("returns the output as content, without an artifact, when it is at or under the threshold and handleEveryOutput is off", async () => {
    const output = rows(20);
    const tokens = countTextTokens(output);
    const fields = await offloadToolOutput(output, meta("call-small"), { artifacts, thresholdTokens: tokens, handleEveryOutput: false });
    expect(fields).toEqual({ content: output });
    expect(await artifacts.collection.countDocuments({ toolCallId: "call-small" })).toBe(0);
  });

  it("returns the whole output as content and an inline artifact holding a copy, when it is under the threshold (issue 46)", async () => {
    const output = rows(20);
    const fields = await offloadToolOutput(output, meta("call-inline"), { artifacts, thresholdTokens: countTextTokens(output) });
    expect(fields.content).toBe(output);
    expect(fields.artifact).toMatchObject({ inline: true, tokens: countTextTokens(output) });
    expect(fields.artifact?.handle).toMatch(/^art_/);
    // Another conversation cannot read it by its handle.
    expect(await artifacts.get(fields.artifact!.handle, { conversationId: "conv-other", reader: alice })).toBeUndefined();
    expect((await artifacts.get(fields.artifact!.handle, { conversationId: "conv-offload", reader: alice }))?.content).toBe(output);
  });

  it("returns a preview and the artifact reference when the output is over the threshold", async () => {
    const output = rows(20);
    const fields = await offloadToolOutput(output, meta("call-over"), { artifacts, thresholdTokens: countTextTokens(output) - 1 });
    expect(fields.artifact?.handle).toMatch(/^art_/);
    expect(fields.content).toBe(fields.artifact?.preview);
    expect(fields.content).toBe(`${output.slice(0, DEFAULT_PREVIEW_CHARS)}…`);
    expect(fields.artifact).toMatchObject({ bytes: Buffer.byteLength(output), tokens: countTextTokens(output) });
    expect((await artifacts.get(fields.artifact!.handle, { conversationId: "conv-offload", reader: alice }))?.content).toBe(output);
  });

  it("uses DEFAULT_OFFLOAD_TOKENS when no threshold is given", async () => {
    let count = 10;
    while (countTextTokens(rows(count)) <= DEFAULT_OFFLOAD_TOKENS) count *= 2;
    const over = await offloadToolOutput(rows(count), meta("call-default-over"), { artifacts });
    const under = await offloadToolOutput(rows(10), meta("call-default-under"), { artifacts });
    expect(over.artifact).toBeDefined();
    expect(under.artifact?.inline).toBe(true);
    expect(under.content).toBe(rows(10));
  });

  it("returns the same handle when a retried tool call is offloaded again", async () => {
    const output = rows(2_000);
    const first = await offloadToolOutput(output, meta("call-retry"), { artifacts });
    const retry = await offloadToolOutput(output, meta("call-retry"), { artifacts });
    expect(retry).toEqual(first);
    expect(await artifacts.collection.countDocuments({ toolCallId: "call-retry" })).toBe(1);
  });
});

describe("offloadToolOutput over the artifact size limit", () => {
  const small = useStoreFixture("offload_cut", (db) => ({ artifacts: new ArtifactStore(db, { maxBytes: 64 * 1024, partBytes: 16 * 1024 }) }), {
    clearBeforeEach: false,
  }).stores;

  it("stores the first part of an output over the limit, starting with a note that says it was cut, instead of failing the turn", async () => {
    // 'é' is two UTF-8 bytes: the cut must fall between characters.
    const output = `${"é".repeat(10)}${rows(20_000)}`;
    const bytes = Buffer.byteLength(output);
    const fields = await offloadToolOutput(output, meta("call-huge"), { artifacts: small.artifacts, thresholdTokens: 100 });
    const stored = await small.artifacts.get(fields.artifact!.handle, { conversationId: "conv-offload", reader: alice });
    const [note, ...rest] = stored!.content.split("\n");
    expect(note).toBe(`[Output cut: the tool returned ${bytes} bytes, over the ${64 * 1024}-byte limit of a stored output; only the first part is kept.]`);
    expect(Buffer.byteLength(stored!.content)).toBeLessThanOrEqual(64 * 1024);
    expect(output.startsWith(rest.join("\n"))).toBe(true);
    expect(rest.join("\n").length).toBeGreaterThan(60_000);
    expect(fields.content.startsWith(note!)).toBe(true);
  });
});

describe("offloadToolOutput of a 100 MB output", () => {
  it("stores its first 16 MB (the default artifact limit) and returns a handle", async () => {
    const block = `${rows(1_000)}\n`;
    const output = block.repeat(Math.ceil((100 * 2 ** 20) / block.length));
    const fields = await offloadToolOutput(output, meta("call-100mb"), { artifacts });
    expect(fields.content.startsWith(`[Output cut: the tool returned ${output.length} bytes, over the ${DEFAULT_MAX_ARTIFACT_BYTES}-byte limit`)).toBe(true);
    expect(fields.artifact?.bytes).toBe(DEFAULT_MAX_ARTIFACT_BYTES);
  });
});
