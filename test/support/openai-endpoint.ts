import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for an OpenAI-compatible chat completions server (`POST /v1/chat/completions`,
 * as Ollama, LM Studio, vLLM and OpenAI serve it). It rejects what the OpenAI API rejects, with its
 * status and error shape: a `tool` message that answers no preceding assistant tool call, an
 * assistant's tool calls left unanswered before the next message, empty or missing content, a
 * content part of a type the API does not know (a Bedrock `cachePoint`), an unknown model, a wrong
 * key. It answers what `reply` says, streamed as server-sent chunks when asked, with usage.
 */

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { type: string; function: { name: string; parameters?: unknown } }[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

export interface ScriptedReply {
  content?: string;
  toolCalls?: { name: string; args: Record<string, unknown> }[];
}

/** A scripted failure: answer this status (and `Retry-After`) instead of a completion. */
export interface ScriptedFailure {
  status: number;
  retryAfterSeconds?: number;
}

export interface OpenAiEndpointOptions {
  /** The one model the server has; another is a 404 `model_not_found`. */
  model: string;
  /** When set, `Authorization: Bearer <apiKey>` is required (401 otherwise). */
  apiKey?: string;
  /** The answer to a valid request. Default: a text that quotes the last user message. */
  reply?: (request: ChatRequest) => ScriptedReply;
}

export interface OpenAiEndpoint {
  /** The base URL a client is given, ending in `/v1`. */
  baseUrl: string;
  /** Every request body received, valid or not, in order. */
  requests: ChatRequest[];
  /** What was refused: one `status message` line each. */
  rejections: string[];
  /** Fail the next requests with these, one each, before answering normally again. */
  failNext(...failures: ScriptedFailure[]): void;
  close(): Promise<void>;
}

const CONTENT_PART_TYPES = ["text", "image_url", "input_audio", "file", "refusal"];

const unansweredProblem = (ids: Set<string>): string =>
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
  `The following tool_call_ids did not have response messages: ${[...ids].join(", ")}`;

/** Why the OpenAI chat API would refuse these messages, or undefined when it would take them. */
export function openAiMessagesProblem(messages: unknown): string | undefined {
  if (!Array.isArray(messages) || messages.length === 0) return "Invalid 'messages': empty array. Expected an array with minimum length 1.";
  const unanswered = new Set<string>();
  for (const [i, message] of (messages as ChatMessage[]).entries()) {
    const at = `messages[${i}]`;
    if (!["system", "developer", "user", "assistant", "tool"].includes(message.role)) return `Invalid value: '${message.role}' at '${at}.role'.`;
    if (message.role !== "tool" && unanswered.size > 0) {
      return unansweredProblem(unanswered);
    }
    const hasToolCalls = message.role === "assistant" && Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
    if (message.content === undefined || message.content === null) {
      if (!hasToolCalls) return `Missing required parameter: '${at}.content'.`;
    } else if (Array.isArray(message.content)) {
      if (message.content.length === 0) return `Invalid '${at}.content': empty array. Expected an array with minimum length 1, but got an empty array instead.`;
      for (const [j, part] of message.content.entries()) {
        const type = (part as { type?: unknown })?.type;
        if (typeof type !== "string" || !CONTENT_PART_TYPES.includes(type)) {
          return `Invalid value: '${String(type)}'. Supported values are: ${CONTENT_PART_TYPES.map((t) => `'${t}'`).join(", ")} at '${at}.content[${j}].type'.`;
        }
      }
    } else if (typeof message.content !== "string") return `Invalid type for '${at}.content': expected a string or an array.`;
    if (message.role === "tool") {
      if (!message.tool_call_id || !unanswered.delete(message.tool_call_id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
    }
    if (hasToolCalls) for (const call of message.tool_calls ?? []) unanswered.add(call.id);
  }
  if (unanswered.size > 0) return unansweredProblem(unanswered);
  return undefined;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (part as { text?: string }).text ?? "").join("");
  return "";
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startOpenAiEndpoint(options: OpenAiEndpointOptions): Promise<OpenAiEndpoint> {
  const requests: ChatRequest[] = [];
  const rejections: string[] = [];
  const failures: ScriptedFailure[] = [];
  let calls = 0;
  const reply =
    options.reply ?? ((request: ChatRequest) => ({ content: `You said: ${textOf([...request.messages].reverse().find((m) => m.role === "user")?.content)}` }));

  const refuse = (res: ServerResponse, status: number, message: string, type: string, code: string | null, headers: Record<string, string> = {}) => {
    rejections.push(`${status} ${message}`);
    send(res, status, { error: { message, type, param: null, code } }, headers);
  };

  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    if (req.method !== "POST" || req.url !== "/v1/chat/completions")
      return refuse(res, 404, `no route ${req.method} ${req.url}`, "invalid_request_error", null);
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return refuse(res, 401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key");
    }
    let request: ChatRequest;
    try {
      request = JSON.parse(body) as ChatRequest;
    } catch {
      return refuse(res, 400, "We could not parse the JSON body of your request.", "invalid_request_error", null);
    }
    requests.push(request);
    const failure = failures.shift();
    if (failure) {
      const headers: Record<string, string> = failure.retryAfterSeconds !== undefined ? { "retry-after": String(failure.retryAfterSeconds) } : {};
      return refuse(res, failure.status, `scripted failure ${failure.status}`, failure.status === 429 ? "rate_limit_exceeded" : "server_error", null, headers);
    }
    if (request.model !== options.model) {
      return refuse(res, 404, `The model \`${request.model}\` does not exist or you do not have access to it.`, "invalid_request_error", "model_not_found");
    }
    const problem = openAiMessagesProblem(request.messages);
    if (problem) return refuse(res, 400, problem, "invalid_request_error", null);

    const answer: ScriptedReply = reply(request);
    calls += 1;
    const toolCalls = (answer.toolCalls ?? []).map((call, i) => ({
      id: `call_${calls}_${i}`,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.args) },
    }));
    const promptTokens = Math.ceil(JSON.stringify(request.messages).length / 4);
    const completionTokens = Math.max(1, Math.ceil(((answer.content ?? "").length + JSON.stringify(toolCalls).length) / 4));
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    const finish = toolCalls.length > 0 ? "tool_calls" : "stop";
    const base = { id: `chatcmpl-${calls}`, created: 1_700_000_000, model: request.model };
    if (!request.stream) {
      return send(res, 200, {
        ...base,
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: answer.content ?? null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
            finish_reason: finish,
          },
        ],
        usage,
      });
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      res.write(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, ...extra })}\n\n`);
    chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
    for (const word of (answer.content ?? "").match(/\S+\s*/g) ?? []) chunk([{ index: 0, delta: { content: word }, finish_reason: null }]);
    for (const [index, call] of toolCalls.entries()) chunk([{ index: 0, delta: { tool_calls: [{ index, ...call }] }, finish_reason: null }]);
    chunk([{ index: 0, delta: {}, finish_reason: finish }]);
    if (request.stream_options?.include_usage) chunk([], { usage });
    res.end("data: [DONE]\n\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    rejections,
    failNext: (...next) => failures.push(...next),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
