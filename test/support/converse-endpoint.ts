import { createHash, type Hash } from "node:crypto";
import http2 from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { EventStreamCodec, type MessageHeaders } from "@smithy/core/event-streams";
import { fromUtf8, toUtf8 } from "@smithy/core/serde";
import { z } from "zod";
import { countClaudeTokens } from "./claude-tokens.js";
import { DEFAULT_LOOKBACK_BLOCKS, PromptCache, type CacheUsage, type Prefix, type PrefixPoint, type PromptCacheOptions } from "./prompt-cache.js";

/**
 * A local stand-in for the Bedrock Runtime Converse and ConverseStream APIs, spoken over HTTP/2
 * cleartext as the AWS SDK's HTTP/2 handler speaks it (ChatBedrockConverse streams when a caller
 * streams, e.g. LangGraph's "messages" stream mode). The real `ChatBedrockConverse` is pointed at it through
 * `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (see `environment`). It rejects, with Bedrock's status and
 * error shape, every request Bedrock rejects for the Converse rules (`lib/model-view/converse-rules.ts`), so a test that passes
 * here sent a request Bedrock would accept.
 *
 * Input tokens are counted by Anthropic's published Claude tokenizer (not cl100k, which the product
 * counts with), and the prompt cache is simulated (`PromptCache`): usage is reported as Bedrock
 * reports it, `inputTokens` without the tokens read from or written to the cache. CountTokens
 * (`/model/{id}/count-tokens`) answers the same count.
 */

/** Context window of the simulated model, in tokens (Claude Sonnet 4 on Bedrock). */
export const DEFAULT_CONTEXT_WINDOW_TOKENS = 200_000;
/** Largest `maxTokens` the simulated model accepts (Claude Sonnet 4's output limit). */
export const DEFAULT_MAX_OUTPUT_TOKENS_LIMIT = 64_000;
/** Cache points Bedrock accepts in one request, tools, system and messages together. */
export const MAX_CACHE_POINTS = 4;
/** Tokens the simulated model adds for each message (role markers). */
export const MESSAGE_FRAMING_TOKENS = 3;
/**
 * Tokens Claude adds to a request that offers tools: its tool-use system prompt (346 for Claude
 * Sonnet 4 with automatic tool choice, in Anthropic's tool-use documentation). Billed as input.
 */
export const TOOL_USE_SYSTEM_PROMPT_TOKENS = 346;

const cachePointSchema = z.object({ cachePoint: z.object({ type: z.literal("default"), ttl: z.enum(["5m", "1h"]).optional() }).strict() }).strict();

const toolResultContentSchema = z.union([z.object({ text: z.string() }).strict(), z.object({ json: z.unknown() }).strict()]);

const contentBlockSchema = z.union([
  z.object({ text: z.string() }).strict(),
  z.object({ toolUse: z.object({ toolUseId: z.string(), name: z.string(), input: z.unknown() }).strict() }).strict(),
  z
    .object({
      toolResult: z
        .object({
          toolUseId: z.string(),
          content: z.array(toolResultContentSchema),
          status: z.enum(["success", "error"]).optional(),
        })
        .strict(),
    })
    .strict(),
  cachePointSchema,
]);

const converseRequestSchema = z.object({
  messages: z.array(z.object({ role: z.enum(["user", "assistant"]), content: z.array(contentBlockSchema) }).strict()),
  system: z.array(z.union([z.object({ text: z.string() }).strict(), cachePointSchema])).optional(),
  inferenceConfig: z
    .object({
      maxTokens: z.number().int().optional(),
      temperature: z.number().optional(),
      topP: z.number().optional(),
      stopSequences: z.array(z.string()).optional(),
    })
    .strict()
    .optional(),
  toolConfig: z
    .object({
      tools: z.array(
        z.union([
          z.object({
            toolSpec: z.object({ name: z.string(), description: z.string().optional(), inputSchema: z.object({ json: z.unknown() }) }),
          }),
          cachePointSchema,
        ]),
      ),
      toolChoice: z.unknown().optional(),
    })
    .optional(),
  additionalModelRequestFields: z.unknown().optional(),
  requestMetadata: z.record(z.string(), z.string()).optional(),
});

/** CountTokens' body: the Converse request's messages, system and tools under `input.converse`. */
const countTokensRequestSchema = z
  .object({
    input: z.object({ converse: converseRequestSchema.pick({ messages: true, system: true, toolConfig: true }).strict() }).strict(),
  })
  .strict();

export type ConverseRequest = z.infer<typeof converseRequestSchema>;
export type ConverseMessage = ConverseRequest["messages"][number];
export type ConverseContentBlock = z.infer<typeof contentBlockSchema>;

/** One tool call the scripted model makes. */
export interface ScriptedToolUse {
  name: string;
  input: Record<string, unknown>;
  /** Default: `tooluse_<request number>_<position>`, deterministic. */
  toolUseId?: string;
}

/**
 * An error ConverseStream sends inside a stream that began with 200 (Bedrock's
 * `modelStreamErrorException`, `throttlingException`, ...), after `afterDeltas` text deltas.
 */
export interface ScriptedStreamError {
  type: string;
  message: string;
  afterDeltas: number;
}

/**
 * The connection dropped mid-answer (ConverseStream only): after `afterFrames` frames of the
 * stream the HTTP/2 session's socket is destroyed, with no GOAWAY and no error frame, as a network
 * fault does. The answer's stop reason and metadata never arrive.
 */
export interface ScriptedDrop {
  afterFrames: number;
}

/** What the scripted model answers to one request. */
export type ScriptedReply =
  | { text: string; streamError?: ScriptedStreamError; drop?: ScriptedDrop }
  | { toolUses: ScriptedToolUse[]; text?: string; drop?: ScriptedDrop }
  /** A service-side failure (throttling, outage), answered with this status and error type. */
  | { error: { status: number; type: string; message: string } };

export type Responder = (request: ConverseRequest, context: { modelId: string; requestNumber: number }) => ScriptedReply | Promise<ScriptedReply>;

/** One request as the endpoint received it, kept for assertions. */
export interface RecordedConverseRequest {
  modelId: string;
  operation: "converse" | "converse-stream" | "count-tokens";
  /** The parsed body (of count-tokens: `input.converse`); undefined when the body was not the Converse JSON shape. */
  body: ConverseRequest | undefined;
  headers: Record<string, string>;
  /** All input tokens by the simulated model's tokenizer, cached ones included (`countInputTokens`). */
  inputTokens: number;
  /** What the cache read and wrote; absent for a request without cache points. */
  cache?: CacheUsage;
  status: number;
  /** The error type when rejected (`ValidationException`, ...). */
  errorType?: string;
  /** ConverseStream: when (`performance.now()`) the first text delta went out, for latency measurements. */
  firstTextAt?: number;
  errorMessage?: string;
}

export interface ConverseEndpointOptions {
  /** Tokens the simulated model accepts, input plus `maxTokens`. Default: DEFAULT_CONTEXT_WINDOW_TOKENS. */
  contextWindowTokens?: number;
  /** Default: DEFAULT_MAX_OUTPUT_TOKENS_LIMIT. */
  maxOutputTokensLimit?: number;
  /**
   * Rejects requests without `inferenceConfig.maxTokens`. Bedrock does not, but the product
   * always sets it, so a request without it is a regression. Default: true.
   */
  requireMaxTokens?: boolean;
  /** Default: `defaultResponder`. */
  respond?: Responder;
  /** The simulated prompt cache's minimum per checkpoint and clock. */
  cache?: PromptCacheOptions;
  /**
   * ConverseStream's pace: text goes out a word (about a token) per delta at this rate, as a model
   * writes it. Default: every delta at once.
   */
  streamTokensPerSecond?: number;
}

interface Limits {
  contextWindowTokens: number;
  maxOutputTokensLimit: number;
  requireMaxTokens: boolean;
}

export interface ConverseEndpoint {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Every request received, oldest first. */
  requests: RecordedConverseRequest[];
  /** The variables that point the AWS SDK (and so `ChatBedrockConverse`) at this endpoint with dummy credentials. */
  environment: Record<string, string>;
  /** Replaces the responder for the following requests. */
  setResponder(respond: Responder): void;
  close(): Promise<void>;
}

class BedrockRejection extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

function validation(message: string): BedrockRejection {
  return new BedrockRejection(400, "ValidationException", message);
}

function isBlank(text: string): boolean {
  return text.trim().length === 0;
}

/** Throws the rejection Bedrock answers for the first rule the request breaks. */
export function checkConverseRules(request: ConverseRequest, limits: Limits, inputTokens: number): void {
  const { messages } = request;
  if (messages.length === 0 || messages[0].role !== "user") {
    throw validation("A conversation must start with a user message. Try again with a conversation that starts with a user message.");
  }
  (request.system ?? []).forEach((block, i) => {
    if ("text" in block && isBlank(block.text)) {
      throw validation(`The text field in the SystemContentBlock object at system.${i} is blank. Add text to the text field, and try again.`);
    }
  });
  let hasToolBlocks = false;
  messages.forEach((message, m) => {
    if (m > 0 && messages[m - 1].role === message.role) {
      throw validation(
        "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.",
      );
    }
    if (message.content.length === 0) {
      throw validation(`The content field in the Message object at messages.${m} is empty. Add a ContentBlock object to the content field and try again.`);
    }
    message.content.forEach((block, b) => {
      if ("text" in block && isBlank(block.text)) {
        throw validation(`The text field in the ContentBlock object at messages.${m}.content.${b} is blank. Add text to the text field, and try again.`);
      }
      if ("toolUse" in block) {
        hasToolBlocks = true;
        if (message.role !== "assistant") throw validation(`messages.${m}.content.${b}: toolUse blocks are only allowed in assistant messages.`);
      }
      if ("toolResult" in block) {
        hasToolBlocks = true;
        if (message.role !== "user") throw validation(`messages.${m}.content.${b}: toolResult blocks are only allowed in user messages.`);
        block.toolResult.content.forEach((part, p) => {
          if ("text" in part && isBlank(part.text)) {
            throw validation(
              `The text field in the ToolResultContentBlock object at messages.${m}.content.${b}.toolResult.content.${p} ` +
                `is blank. Add text to the text field, and try again.`,
            );
          }
        });
      }
    });
    checkToolPairing(messages, m);
  });
  if (hasToolBlocks && !request.toolConfig) {
    throw validation("The toolConfig field must be defined when using toolUse and toolResult content blocks.");
  }
  const names = new Set<string>();
  for (const tool of request.toolConfig?.tools ?? []) {
    if (!("toolSpec" in tool)) continue;
    const { name } = tool.toolSpec;
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw validation(`Tool name ${JSON.stringify(name)} must match ^[a-zA-Z0-9_-]{1,64}$.`);
    if (names.has(name)) throw validation(`Tool names must be unique: ${name} appears more than once.`);
    names.add(name);
  }
  if (messages[messages.length - 1].role !== "user") {
    throw validation("A conversation must end with a user message. Try again with a conversation that ends with a user message.");
  }
  const maxTokens = request.inferenceConfig?.maxTokens;
  if (maxTokens === undefined) {
    if (limits.requireMaxTokens) throw validation("inferenceConfig.maxTokens is required (the product always sets it).");
  } else if (maxTokens < 1 || maxTokens > limits.maxOutputTokensLimit) {
    throw validation(
      `The maximum tokens you requested exceeds the model limit of ${limits.maxOutputTokensLimit}. Try again with ` +
        `a maximum tokens value that is lower than ${limits.maxOutputTokensLimit}.`,
    );
  }
  if (inputTokens > limits.contextWindowTokens) {
    throw validation(`The model returned the following errors: prompt is too long: ${inputTokens} tokens > ${limits.contextWindowTokens} maximum`);
  }
  if (maxTokens !== undefined && inputTokens + maxTokens > limits.contextWindowTokens) {
    throw validation(
      `The model returned the following errors: input length and \`max_tokens\` exceed context limit: ` +
        `${inputTokens} + ${maxTokens} > ${limits.contextWindowTokens}, decrease input length or \`max_tokens\` and ` +
        `try again`,
    );
  }
}

/** Every toolUse is answered in the next message by toolResults with exactly its ids, and no toolResult lacks its toolUse. */
function checkToolPairing(messages: ConverseMessage[], m: number): void {
  const message = messages[m];
  if (message.role === "assistant") {
    const ids = message.content.flatMap((b) => ("toolUse" in b ? [b.toolUse.toolUseId] : []));
    if (new Set(ids).size !== ids.length) throw validation(`messages.${m}.content: toolUse ids must be unique.`);
    if (ids.length === 0) return;
    const next = messages[m + 1];
    const answered = new Set(next?.role === "user" ? next.content.flatMap((b) => ("toolResult" in b ? [b.toolResult.toolUseId] : [])) : []);
    const missing = ids.filter((id) => !answered.has(id));
    if (missing.length > 0) {
      throw validation(`Expected toolResult blocks at messages.${m + 1}.content for the following Ids: ${missing.join(", ")}`);
    }
    return;
  }
  const results = message.content.flatMap((b) => ("toolResult" in b ? [b.toolResult.toolUseId] : []));
  if (results.length === 0) return;
  const previous = messages[m - 1];
  const asked = new Set(previous?.role === "assistant" ? previous.content.flatMap((b) => ("toolUse" in b ? [b.toolUse.toolUseId] : [])) : []);
  if (results.length > asked.size) {
    throw validation(`The number of toolResult blocks at messages.${m}.content exceeds the number of toolUse blocks of previous turn.`);
  }
  const unexpected = results.filter((id) => !asked.has(id));
  if (unexpected.length > 0) {
    throw validation(
      `messages.${m}.content: unexpected tool_use_id found in tool_result blocks: ${unexpected.join(", ")}. Each ` +
        `tool_result block must have a corresponding tool_use block in the previous message.`,
    );
  }
}

export function blockText(block: ConverseContentBlock): string {
  if ("text" in block) return block.text;
  if ("toolUse" in block) return `${block.toolUse.name} ${JSON.stringify(block.toolUse.input)}`;
  if ("toolResult" in block) return block.toolResult.content.map((c) => ("text" in c ? c.text : JSON.stringify(c.json))).join("\n");
  return "";
}

/** The request's content in prefix order (tools, system, messages), each part with its model tokens; cache points as markers. */
type PrefixPart = { tokens: number; json: unknown; framing?: true } | { cachePoint: { ttl?: "5m" | "1h" } };

function prefixParts(request: Pick<ConverseRequest, "messages" | "system" | "toolConfig">): PrefixPart[] {
  const parts: PrefixPart[] = [];
  if (toolSpecs(request).length > 0) parts.push({ tokens: TOOL_USE_SYSTEM_PROMPT_TOKENS, json: "tool-use system prompt" });
  for (const tool of request.toolConfig?.tools ?? []) {
    parts.push("toolSpec" in tool ? { tokens: countClaudeTokens(JSON.stringify(tool.toolSpec)), json: tool } : tool);
  }
  for (const block of request.system ?? []) parts.push("text" in block ? { tokens: countClaudeTokens(block.text), json: block } : block);
  request.messages.forEach((message, m) => {
    parts.push({ tokens: MESSAGE_FRAMING_TOKENS, json: { message: m, role: message.role }, framing: true });
    for (const block of message.content) parts.push("cachePoint" in block ? block : { tokens: countClaudeTokens(blockText(block)), json: block });
  });
  return parts;
}

/**
 * All input tokens of a request by the simulated model's tokenizer: every text, tool input, tool schema and message framing, and the tool-use system
 * prompt.
 */
export function countInputTokens(request: Pick<ConverseRequest, "messages" | "system" | "toolConfig">): number {
  return prefixParts(request).reduce((n, part) => n + ("tokens" in part ? part.tokens : 0), 0);
}

/**
 * The prefixes of a request ending at each of its parts (cache points left out): tokens so far and a
 * hash of the content so far. Two requests share a prefix of `tokens` where they share a `key`.
 */
export function prefixesOf(request: Pick<ConverseRequest, "messages" | "system" | "toolConfig">): Prefix[] {
  const prefixes: Prefix[] = [];
  const hash = createHash("sha256");
  let tokens = 0;
  for (const part of prefixParts(request)) {
    if (!("tokens" in part)) continue;
    tokens += part.tokens;
    hash.update(JSON.stringify(part.json)).update("\u0000");
    prefixes.push({ tokens, key: hash.copy().digest("hex") });
  }
  return prefixes;
}

/**
 * The prefix each cache point closes (its tokens and a hash of everything before it), with the
 * prefixes at the content-block boundaries before it, for the cache's look-back. Throws Bedrock's
 * rejections of the points.
 */
function prefixPoints(parts: readonly PrefixPart[]): PrefixPoint[] {
  const points: PrefixPoint[] = [];
  const boundaries: Prefix[] = [];
  const hash: Hash = createHash("sha256");
  const anyPoint = parts.some((p) => "cachePoint" in p);
  let tokens = 0;
  for (const part of parts) {
    if ("tokens" in part) {
      tokens += part.tokens;
      hash.update(JSON.stringify(part.json)).update("\u0000");
      if (anyPoint && !part.framing) boundaries.push({ tokens, key: hash.copy().digest("hex") });
      continue;
    }
    const ttl = part.cachePoint.ttl ?? "5m";
    if (ttl === "1h" && points.some((p) => p.ttl === "5m")) {
      throw validation("The model returned the following errors: a cache point with ttl='1h' must not come after a cache point with ttl='5m'.");
    }
    const earlier = boundaries.slice(-DEFAULT_LOOKBACK_BLOCKS - 1).reverse();
    points.push({ tokens, key: hash.copy().digest("hex"), ttl, earlier });
  }
  if (points.length > MAX_CACHE_POINTS) {
    throw validation(
      `The model returned the following errors: A maximum of ${MAX_CACHE_POINTS} blocks with cache_control may be provided. Found ${points.length}.`,
    );
  }
  return points;
}

/** The tool specifications of a request, its cache points left out. */
export function toolSpecs(request: Pick<ConverseRequest, "toolConfig">) {
  return (request.toolConfig?.tools ?? []).flatMap((tool) => ("toolSpec" in tool ? [tool.toolSpec] : []));
}

/** The text of the last user message, tool results left out. */
export function lastUserText(request: ConverseRequest): string {
  const last = request.messages[request.messages.length - 1];
  return last.content.flatMap((b) => ("text" in b ? [b.text] : [])).join("\n");
}

function sampleArguments(schema: unknown): Record<string, unknown> {
  const { properties = {}, required = [] } = (schema ?? {}) as { properties?: Record<string, { type?: string }>; required?: string[] };
  const args: Record<string, unknown> = {};
  for (const name of required) {
    const type = properties[name]?.type;
    args[name] = type === "number" || type === "integer" ? 1 : type === "boolean" ? true : type === "array" ? [] : type === "object" ? {} : "example";
  }
  return args;
}

/**
 * The scripted model used unless a test gives its own: after tool results, a text answer that
 * summarises them; else a call of the first offered tool named in the user's text (required
 * arguments filled with samples); else an echo of the question.
 */
export const defaultResponder: Responder = (request) => {
  const last = request.messages[request.messages.length - 1];
  const results = last.content.flatMap((b) => ("toolResult" in b ? [b.toolResult] : []));
  if (results.length > 0) {
    const previous = request.messages[request.messages.length - 2];
    const names = new Map(previous.content.flatMap((b) => ("toolUse" in b ? [[b.toolUse.toolUseId, b.toolUse.name] as const] : [])));
    const parts = results.map((r) => {
      const text = r.content.map((c) => ("text" in c ? c.text : JSON.stringify(c.json))).join(" ");
      return `${names.get(r.toolUseId)} returned ${JSON.stringify(text.slice(0, 200))}`;
    });
    return { text: `Summary of ${results.length} tool result(s): ${parts.join("; ")}` };
  }
  const question = lastUserText(request);
  const tool = toolSpecs(request).find((spec) => question.toLowerCase().includes(spec.name.toLowerCase()));
  if (tool) return { toolUses: [{ name: tool.name, input: sampleArguments(tool.inputSchema.json) }] };
  return { text: `You asked: ${question}` };
};

function replyContent(reply: Exclude<ScriptedReply, { error: unknown }>, requestNumber: number): ConverseContentBlock[] {
  if ("toolUses" in reply) {
    const content: ConverseContentBlock[] = reply.text ? [{ text: reply.text }] : [];
    reply.toolUses.forEach((use, i) =>
      content.push({ toolUse: { toolUseId: use.toolUseId ?? `tooluse_${requestNumber}_${i}`, name: use.name, input: use.input } }),
    );
    return content;
  }
  return [{ text: reply.text }];
}

/** The AWS event-stream framing (prelude, headers, payload, CRCs) as the SDK itself decodes it. */
const codec = new EventStreamCodec(toUtf8, fromUtf8);

function frame(headers: Record<string, string>, payload: unknown): Buffer {
  const typed: MessageHeaders = {};
  for (const [name, value] of Object.entries(headers)) typed[name] = { type: "string", value };
  return Buffer.from(codec.encode({ headers: typed, body: fromUtf8(JSON.stringify(payload)) }));
}

/** One event of a ConverseStream answer (`application/vnd.amazon.eventstream`). */
function eventMessage(eventType: string, payload: unknown): Buffer {
  return frame({ ":event-type": eventType, ":content-type": "application/json", ":message-type": "event" }, payload);
}

/** An exception inside the stream, as Bedrock sends one after the 200: the SDK throws it from the stream's iterator. */
function exceptionMessage(exceptionType: string, message: string): Buffer {
  return frame({ ":exception-type": exceptionType, ":content-type": "application/json", ":message-type": "exception" }, { message });
}

/** Text as a model writes it: a word (with its trailing space) per delta. */
function textDeltas(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** One frame of a stream; `text` marks a text delta, which is paced and counted. */
interface StreamFrame {
  bytes: Buffer;
  text?: boolean;
}

/** The ConverseStream events of one answer, each a frame: text a word per delta, tool inputs as JSON strings. */
function streamEvents(content: ConverseContentBlock[], stopReason: string, usage: unknown, latencyMs: number): StreamFrame[] {
  const events: StreamFrame[] = [];
  const push = (eventType: string, payload: unknown, text?: boolean) => events.push({ bytes: eventMessage(eventType, payload), text });
  push("messageStart", { role: "assistant" });
  content.forEach((block, contentBlockIndex) => {
    if ("toolUse" in block) {
      const { toolUseId, name, input } = block.toolUse;
      push("contentBlockStart", { contentBlockIndex, start: { toolUse: { toolUseId, name } } });
      push("contentBlockDelta", { contentBlockIndex, delta: { toolUse: { input: JSON.stringify(input) } } });
    } else if ("text" in block) {
      for (const text of textDeltas(block.text)) push("contentBlockDelta", { contentBlockIndex, delta: { text } }, true);
    }
    push("contentBlockStop", { contentBlockIndex });
  });
  push("messageStop", { stopReason });
  push("metadata", { usage, metrics: { latencyMs } });
  return events;
}

/** Writes the frames, text deltas paced at `tokensPerSecond`; an error cuts the stream after its count of deltas. */
async function writeStream(
  stream: http2.ServerHttp2Stream,
  frames: StreamFrame[],
  record: RecordedConverseRequest,
  tokensPerSecond: number | undefined,
  error?: ScriptedStreamError,
  drop?: { at: ScriptedDrop; connection: () => void },
): Promise<void> {
  let deltas = 0;
  for (const [index, { bytes, text }] of frames.entries()) {
    if (stream.destroyed) return;
    if (drop && index === drop.at.afterFrames) {
      record.errorType = "dropped";
      // What was written reaches the client first, as a fault mid-answer leaves it.
      await new Promise((resolve) => setTimeout(resolve, 50));
      drop.connection();
      return;
    }
    if (text && error && deltas === error.afterDeltas) {
      stream.end(exceptionMessage(error.type, error.message));
      return;
    }
    if (text && tokensPerSecond && deltas > 0) await new Promise((resolve) => setTimeout(resolve, 1000 / tokensPerSecond));
    if (text) deltas++;
    stream.write(bytes);
    if (text) record.firstTextAt ??= performance.now();
  }
  stream.end();
}

function parseOrReject<T>(schema: z.ZodType<T>, json: unknown): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw validation(`Malformed input request: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}

/** Usage as Bedrock reports it: `inputTokens` leaves out what was read from or written to the cache; `totalTokens` counts everything. */
function reportedUsage(inputTokens: number, outputTokens: number, cache: CacheUsage | undefined) {
  if (!cache) return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
  const { cacheReadInputTokens, cacheWriteInputTokens, cacheDetails } = cache;
  return {
    inputTokens: inputTokens - cacheReadInputTokens - cacheWriteInputTokens,
    outputTokens,
    totalTokens: inputTokens + outputTokens,
    cacheReadInputTokens,
    cacheWriteInputTokens,
    ...(cacheDetails.length > 0 ? { cacheDetails } : {}),
  };
}

function flattenHeaders(headers: http2.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value !== undefined && !key.startsWith(":")) flat[key] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

function readBody(stream: http2.ServerHttp2Stream): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    stream.on("error", reject);
  });
}

function send(stream: http2.ServerHttp2Stream, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (stream.destroyed || stream.closed) return;
  const payload = JSON.stringify(body);
  stream.respond({
    ":status": status,
    "content-type": "application/json",
    "x-amzn-requestid": crypto.randomUUID(),
    ...headers,
  });
  stream.end(payload);
}

function sendRejection(stream: http2.ServerHttp2Stream, rejection: BedrockRejection): void {
  // Bedrock names the error in this header; the SDK maps it to the exception class.
  send(
    stream,
    rejection.status,
    { message: rejection.message },
    { "x-amzn-errortype": `${rejection.type}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
  );
}

/** Starts the endpoint on 127.0.0.1 and an ephemeral port. */
export async function startConverseEndpoint(options: ConverseEndpointOptions = {}): Promise<ConverseEndpoint> {
  const cache = new PromptCache(options.cache);
  const limits: Limits = {
    contextWindowTokens: options.contextWindowTokens ?? DEFAULT_CONTEXT_WINDOW_TOKENS,
    maxOutputTokensLimit: options.maxOutputTokensLimit ?? DEFAULT_MAX_OUTPUT_TOKENS_LIMIT,
    requireMaxTokens: options.requireMaxTokens ?? true,
  };
  let respond = options.respond ?? defaultResponder;
  const requests: RecordedConverseRequest[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer();
  const sockets = new Map<number, Socket>();
  server.on("connection", (socket: Socket) => {
    if (socket.remotePort === undefined) return;
    const port = socket.remotePort;
    sockets.set(port, socket);
    socket.on("close", () => sockets.delete(port));
  });
  server.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });

  async function handle(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): Promise<void> {
    const started = performance.now();
    const raw = await readBody(stream);
    const path = String(headers[":path"] ?? "");
    const match = /^\/model\/([^/]+)\/(converse|converse-stream|count-tokens)$/.exec(path.split("?")[0]);
    if (headers[":method"] !== "POST" || !match) {
      sendRejection(stream, new BedrockRejection(404, "UnknownOperationException", `No operation at ${headers[":method"]} ${path}`));
      return;
    }
    const modelId = decodeURIComponent(match[1]);
    const record: RecordedConverseRequest = {
      modelId,
      operation: match[2] as RecordedConverseRequest["operation"],
      body: undefined,
      headers: flattenHeaders(headers),
      inputTokens: 0,
      status: 200,
    };
    requests.push(record);
    const requestNumber = requests.length;
    try {
      const authorization = record.headers.authorization ?? "";
      if (!authorization.startsWith("AWS4-HMAC-SHA256 ") && !authorization.startsWith("Bearer ")) {
        throw new BedrockRejection(403, "AccessDeniedException", "Missing Authentication Token");
      }
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        throw validation("Malformed input request, please reformat your input and try again.");
      }
      if (record.operation === "count-tokens") {
        const parsed = parseOrReject(countTokensRequestSchema, json);
        record.body = parsed.input.converse;
        record.inputTokens = countInputTokens(parsed.input.converse);
        send(stream, 200, { inputTokens: record.inputTokens });
        return;
      }
      const parsed = parseOrReject(converseRequestSchema, json);
      record.body = parsed;
      const parts = prefixParts(parsed);
      record.inputTokens = parts.reduce((n, part) => n + ("tokens" in part ? part.tokens : 0), 0);
      const points = prefixPoints(parts);
      checkConverseRules(parsed, limits, record.inputTokens);
      const reply = await respond(parsed, { modelId, requestNumber });
      if ("error" in reply) throw new BedrockRejection(reply.error.status, reply.error.type, reply.error.message);
      if (points.length > 0) record.cache = cache.use(modelId, points);
      const content = replyContent(reply, requestNumber);
      const outputTokens = content.reduce((n, block) => n + countClaudeTokens(blockText(block)), 0);
      const stopReason = "toolUses" in reply ? "tool_use" : "end_turn";
      const usage = reportedUsage(record.inputTokens, outputTokens, record.cache);
      const latencyMs = Math.max(1, Math.round(performance.now() - started));
      if (record.operation === "converse-stream") {
        stream.respond({ ":status": 200, "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": crypto.randomUUID() });
        const streamError = "streamError" in reply ? reply.streamError : undefined;
        if (streamError) record.errorType = streamError.type;
        const frames = streamEvents(content, stopReason, usage, latencyMs);
        // The session's own socket refuses destroy(); the raw one, found by its port, does not.
        const port = stream.session?.socket.remotePort;
        const drop = reply.drop && { at: reply.drop, connection: () => sockets.get(port ?? -1)?.destroy() };
        await writeStream(stream, frames, record, options.streamTokensPerSecond, streamError, drop);
        return;
      }
      send(stream, 200, { output: { message: { role: "assistant", content } }, stopReason, usage, metrics: { latencyMs } });
    } catch (error) {
      const rejection = error instanceof BedrockRejection ? error : new BedrockRejection(500, "InternalServerException", String(error));
      record.status = rejection.status;
      record.errorType = rejection.type;
      record.errorMessage = rejection.message;
      sendRejection(stream, rejection);
    }
  }

  server.on("stream", (stream, headers) => {
    handle(stream, headers).catch((error: unknown) => stream.destroy(error as Error));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    requests,
    environment: {
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: url,
      AWS_ACCESS_KEY_ID: "AKIDLOCALTEST",
      AWS_SECRET_ACCESS_KEY: "local-test-secret",
      AWS_REGION: "us-east-1",
      AWS_DEFAULT_REGION: "us-east-1",
    },
    setResponder(next) {
      respond = next;
    },
    close() {
      // The SDK keeps its HTTP/2 sessions open for reuse; close would wait for them forever.
      for (const session of sessions) session.destroy();
      return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
