import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import type { AIMessageChunk, MessageContent } from "@langchain/core/messages";
import { ChatOpenAICompletions, type ChatOpenAICompletionsCallOptions, OpenAIClient } from "@langchain/openai";
import type { ModelConfig, OpenAiCompatibleConfig } from "../config/model-config.js";
import { ModelBusyError, ModelCallFailedError, type ModelErrorCode } from "../errors.js";
import { countTextTokens } from "../model-view/index.js";

/** Retries of one call inside LangChain's caller: none, so a failure reaches the turn at once with its code (the worker retries turns). */
export const DEFAULT_OPENAI_MAX_RETRIES = 0;
/** Longest wait for one completion: a local model on a laptop is slow, but not this slow. */
export const DEFAULT_OPENAI_TIMEOUT_MS = 120_000;
/** The key sent to a server that needs none: the OpenAI client refuses to run without one. */
const NO_KEY = "not-needed";
/** Seconds to wait after a 429 or 503 without a `Retry-After`. */
const DEFAULT_RETRY_AFTER_SECONDS = 10;

/** The HTTP status a server answered with, and its `Retry-After` in seconds, when it answered. */
function answered(error: unknown): { status: number; retryAfter?: number } | undefined {
  if (!(error instanceof OpenAIClient.APIError) || typeof error.status !== "number") return undefined;
  const header = error.headers?.get?.("retry-after");
  const seconds = header ? Number(header) : Number.NaN;
  return { status: error.status, retryAfter: Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds) : undefined };
}

const CODE_BY_STATUS: Record<number, ModelErrorCode> = {
  400: "model_invalid_request",
  401: "model_denied",
  403: "model_denied",
  404: "model_not_found",
  422: "model_invalid_request",
};

/**
 * A failed call to an OpenAI-compatible server as the typed errors every provider's failures
 * share (`lib/errors.ts`): throttled or not ready (429, 503) `ModelBusyError`; refused key (401,
 * 403), unknown model (404), rejected request (400, 422), unreachable or failing server (no
 * answer, a timeout, another 5xx) `ModelCallFailedError` with that code. The reason names the
 * status and the server, never the request's or the answer's text. Anything else (an abort) is
 * returned as it is.
 */
export function openAiCompatibleCallError(error: unknown, baseUrl: string): unknown {
  if (error instanceof ModelCallFailedError) return error;
  const server = new URL(baseUrl).host;
  const status = answered(error);
  if (status) {
    const reason = `HTTP ${status.status} from the OpenAI-compatible server at ${server}`;
    if (status.status === 429 || status.status === 503) {
      return new ModelBusyError(`the model is busy (${reason})`, reason, status.retryAfter ?? DEFAULT_RETRY_AFTER_SECONDS, { cause: error });
    }
    const code = CODE_BY_STATUS[status.status] ?? (status.status >= 500 ? "model_unreachable" : "model_invalid_request");
    return new ModelCallFailedError(`the model call failed (${reason})`, code, reason, { cause: error });
  }
  const unreachable = error instanceof OpenAIClient.APIConnectionError || (error instanceof Error && error.name === "TimeoutError");
  if (unreachable) {
    const reason = `${unreachableCause(error)}: no answer from the OpenAI-compatible server at ${withoutSecrets(baseUrl)}`;
    return new ModelCallFailedError(`the model could not be reached (${reason})`, "model_unreachable", reason, { cause: error });
  }
  return error;
}

/** What a system error's code means when a call got no answer (Node's and undici's codes). */
const UNREACHABLE_CAUSES: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ETIMEDOUT: "connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  UND_ERR_SOCKET: "connection closed",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host lookup failed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
};
/** How deep a failed fetch nests the system error: the client's error, fetch's TypeError, the socket's error. */
const MAX_CAUSE_DEPTH = 5;

/**
 * Why a call got no answer, from the first error code in its cause chain (the codes, never the
 * messages, which can quote what was sent): "connection refused (ECONNREFUSED)", "timed out", or
 * "connection failed" when nothing says more.
 */
function unreachableCause(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < MAX_CAUSE_DEPTH; depth++) {
    if (current instanceof OpenAIClient.APIConnectionTimeoutError || current.name === "TimeoutError") return "timed out";
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && code !== "") return `${UNREACHABLE_CAUSES[code] ?? "connection failed"} (${code})`;
    current = current.cause;
  }
  return "connection failed";
}

/** A base URL as a reason may show it: scheme, host and path, without credentials or query. */
function withoutSecrets(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.origin}${url.pathname}`;
}

/**
 * `ChatOpenAICompletions` (the Chat Completions API, which Ollama, LM Studio, vLLM and gateways
 * serve) whose failures are the shared model errors. The view it is sent is the same as Bedrock's,
 * which already holds that API's rules (each tool call answered by its result, in order, no empty
 * content); the graph sends it no cache points.
 */
export class OpenAiCompatibleChatModel extends ChatOpenAICompletions {
  readonly #baseUrl: string;

  constructor(config: OpenAiCompatibleConfig, options: { maxOutputTokens: number; maxRetries?: number; timeoutMs?: number }) {
    super({
      model: config.model,
      apiKey: config.apiKey ?? NO_KEY,
      configuration: { baseURL: config.baseUrl },
      maxTokens: options.maxOutputTokens,
      temperature: 0,
      streaming: true,
      streamUsage: true,
      maxRetries: options.maxRetries ?? DEFAULT_OPENAI_MAX_RETRIES,
      timeout: options.timeoutMs ?? DEFAULT_OPENAI_TIMEOUT_MS,
    });
    this.#baseUrl = config.baseUrl;
  }

  /**
   * LangChain estimates a streamed call's tokens with a tokenizer it downloads; this counts them
   * with the view's own (cl100k, packaged), so nothing is fetched. The reported usage is the
   * server's, from the stream's last chunk.
   */
  override async getNumTokens(content: MessageContent): Promise<number> {
    const text = typeof content === "string" ? content : content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
    return countTextTokens(text);
  }

  override async invoke(input: BaseLanguageModelInput, options?: Partial<ChatOpenAICompletionsCallOptions>): Promise<AIMessageChunk> {
    try {
      return await super.invoke(input, options);
    } catch (error) {
      throw openAiCompatibleCallError(error, this.#baseUrl);
    }
  }
}

/** The OpenAI-compatible model of a configuration; `createChatModel` calls it for `MODEL_PROVIDER=openai-compatible`. */
export function createOpenAiCompatibleModel(config: Pick<ModelConfig, "openAiCompatible" | "maxOutputTokens">): OpenAiCompatibleChatModel {
  if (!config.openAiCompatible) throw new TypeError("openai-compatible needs OPENAI_BASE_URL and OPENAI_MODEL (checked by loadConfig)");
  return new OpenAiCompatibleChatModel(config.openAiCompatible, { maxOutputTokens: config.maxOutputTokens });
}
