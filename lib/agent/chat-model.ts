import { ChatBedrockConverse } from "@langchain/aws";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage } from "@langchain/core/messages";
import type { ModelConfig } from "../config/model-config.js";
import { ModelBusyError, ModelCallFailedError, ModelCredentialsError, type ModelErrorCode, ThreadwiseError } from "../errors.js";
import { GEN_AI_PROVIDER_NAMES } from "../observability/tracing.js";
import { bedrockTokenCounter, type ModelTokenCounter } from "./bedrock-token-counter.js";
import { LocalChatModel } from "./local-chat-model.js";
import { finishReasonsOf } from "./model-usage.js";
import { createOpenAiCompatibleModel } from "./openai-compatible-model.js";

/**
 * The chat model for a provider. Bedrock is reached through the real Converse client;
 * `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (read by the AWS SDK itself) can point it elsewhere.
 */
export function createChatModel(
  config: Pick<ModelConfig, "provider" | "bedrockModelId" | "region" | "maxOutputTokens"> &
    Partial<Pick<ModelConfig, "bedrockBearerToken" | "openAiCompatible">>,
): BaseChatModel {
  if (config.provider === "local") return new LocalChatModel();
  if (config.provider === "openai-compatible") return createOpenAiCompatibleModel(config);
  return new ChatBedrockConverse({
    model: config.bedrockModelId,
    region: config.region,
    // A Bedrock API key, when given, instead of AWS credentials.
    ...(config.bedrockBearerToken ? { bedrockBearerToken: config.bedrockBearerToken } : {}),
    maxTokens: config.maxOutputTokens,
    temperature: 0,
  });
}

/**
 * Fails fast, with what to do, when Bedrock is the provider and this process has no AWS
 * credentials: otherwise every turn would fail on its first model call. The check resolves the
 * SDK's default credential chain only; it calls no AWS API.
 */
export async function checkModelCredentials(config: ModelConfig): Promise<void> {
  if (config.provider !== "bedrock" || config.bedrockBearerToken) return;
  const { BedrockRuntimeClient } = await import("@aws-sdk/client-bedrock-runtime");
  const client = new BedrockRuntimeClient({ region: config.region });
  try {
    await client.config.credentials();
  } catch (error) {
    throw new ModelCredentialsError(
      "MODEL_PROVIDER=bedrock needs AWS credentials and none were found; set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), " +
        "AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or start with MODEL_PROVIDER=local for the offline model.",
      { cause: error },
    );
  } finally {
    client.destroy();
  }
}

/**
 * The model's `gen_ai.provider.name` (lib/observability/tracing.ts): `aws.bedrock` for
 * `ChatBedrockConverse`, `openai` for an OpenAI-compatible server, the offline model's own value.
 */
export function genAiProviderOf(model: BaseChatModel): string {
  if (model instanceof ChatBedrockConverse) return GEN_AI_PROVIDER_NAMES.bedrock;
  if (model instanceof LocalChatModel) return GEN_AI_PROVIDER_NAMES.local;
  return model._llmType() === "openai" ? GEN_AI_PROVIDER_NAMES["openai-compatible"] : model._llmType();
}

/** Bedrock's CountTokens through the chat model's own client, when the model is a Bedrock one. */
export function createModelTokenCounter(model: BaseChatModel, modelId: string): ModelTokenCounter | undefined {
  return model instanceof ChatBedrockConverse ? bedrockTokenCounter(model.client, modelId) : undefined;
}

/** AWS SDK errors that mean this process may not call the model: no credentials, or credentials Bedrock refuses. */
const CREDENTIAL_ERROR_NAMES = new Set(["CredentialsProviderError", "AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"]);

/** Bedrock is throttling this account (a rate or a tokens-per-minute quota) or the model is not ready yet: the same call succeeds later. */
const BUSY_ERROR_NAMES = new Set(["ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException", "ServiceQuotaExceededException"]);

/** Bedrock's other exceptions (and the SDK's own for a call that never got an answer), by the code a turn stores. */
const FAILED_ERROR_CODES: Readonly<Record<string, ModelErrorCode>> = {
  ValidationException: "model_invalid_request",
  ResourceNotFoundException: "model_not_found",
  InternalServerException: "model_unreachable",
  ModelErrorException: "model_unreachable",
  ModelStreamErrorException: "model_unreachable",
  ModelTimeoutException: "model_unreachable",
  TimeoutError: "model_unreachable",
  RequestTimeout: "model_unreachable",
};

/** `lc_error_code` of @langchain/aws's own watchdog: no first or next chunk within its `streamIdleTimeout` (60 s by default), a model that hangs. */
const STREAM_TIMEOUT_LC_CODE = "MODEL_STREAM_TIMEOUT";

/** Socket errors of a call that did not reach Bedrock (`code` of Node's system errors). */
const NETWORK_ERROR_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "EPIPE"]);
/** The HTTP/2 handler's errors of a session that failed or was refused (`ERR_HTTP2_STREAM_CANCEL` when nothing listens). */
const HTTP2_ERROR_PREFIX = "ERR_HTTP2_";

/** Retry-After of a busy model when Bedrock names none: the worker's first backoff step. */
export const DEFAULT_MODEL_BUSY_RETRY_AFTER_SECONDS = 10;

function httpStatusOf(error: Error): number | undefined {
  const status = (error as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode;
  return typeof status === "number" ? status : undefined;
}

/** The one-line reason of a failed call: the exception's name and HTTP status, never its message (it can quote the request). */
function reasonOf(error: Error): string {
  const status = httpStatusOf(error);
  const code = (error as { code?: unknown; lc_error_code?: unknown }).code ?? (error as { lc_error_code?: unknown }).lc_error_code;
  return `${error.name}${status ? ` (HTTP ${status})` : typeof code === "string" ? ` (${code})` : ""}`;
}

/**
 * A model call's failure as the product's typed error, by the AWS SDK exception's name, never by
 * its message: credential failures as a `ModelCredentialsError` that says what to do; Bedrock
 * throttling, unavailability and a model not ready as `ModelBusyError` (503 `model_busy`, retried
 * by the worker); Bedrock's other refusals and faults, and a call that never reached it, as
 * `ModelCallFailedError` with its code. Any other error (a tool's, an abort) is returned as it is.
 */
export function modelCallError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof ThreadwiseError) return error;
  if (CREDENTIAL_ERROR_NAMES.has(error.name)) {
    return new ModelCredentialsError(
      `the model cannot be called with this process's AWS credentials (${error.name}); give the function or process Bedrock access ` +
        "(README, Troubleshooting)",
      { cause: error },
    );
  }
  const reason = reasonOf(error);
  if (BUSY_ERROR_NAMES.has(error.name)) {
    return new ModelBusyError(`the model is busy (${error.name}); retry later`, reason, DEFAULT_MODEL_BUSY_RETRY_AFTER_SECONDS, { cause: error });
  }
  const status = httpStatusOf(error);
  const networkCode = (error as { code?: unknown }).code;
  const code =
    FAILED_ERROR_CODES[error.name] ??
    ((error as { lc_error_code?: unknown }).lc_error_code === STREAM_TIMEOUT_LC_CODE ? "model_unreachable" : undefined) ??
    (typeof networkCode === "string" && (NETWORK_ERROR_CODES.has(networkCode) || networkCode.startsWith(HTTP2_ERROR_PREFIX))
      ? "model_unreachable"
      : undefined) ??
    (status !== undefined && status >= 500 ? "model_unreachable" : status !== undefined && status >= 400 ? "model_invalid_request" : undefined);
  if (!code) return error;
  return new ModelCallFailedError(`the model call failed (${error.name})`, code, reason, { cause: error });
}

/**
 * A model call is complete only when the model said so. A stream cut by the network (an HTTP/2
 * connection dropped without GOAWAY) ends without an error in the AWS SDK, and LangChain returns
 * what arrived as if it were the answer: half a sentence, or a tool call whose input was cut.
 * Bedrock ends every answer with `messageStop` (its stop reason) and `metadata` (its usage); without
 * them the answer is refused as `model_unreachable` (retried as other transient failures are),
 * never recorded, streamed as final, or counted as usage it did not report. Only Bedrock's answers
 * are checked: LangChain's OpenAI client does not keep a streamed `finish_reason` on every answer,
 * and the offline model names none.
 */
export function incompleteAnswerError(provider: string, answer: AIMessage): ModelCallFailedError | undefined {
  if (provider !== GEN_AI_PROVIDER_NAMES.bedrock) return undefined;
  const metadata = (answer.response_metadata ?? {}) as { metadata?: unknown; messageStop?: unknown; stopReason?: unknown };
  const stopped = finishReasonsOf(answer).length > 0;
  // A streamed Bedrock answer carries both events; a whole (Converse) one has its stopReason and usage inline.
  if (stopped && (metadata.messageStop === undefined || metadata.metadata !== undefined)) return undefined;
  const missing = stopped ? "its metadata" : "its stop reason";
  return new ModelCallFailedError(
    `the model's answer ended before ${missing} (the connection was cut)`,
    "model_unreachable",
    `stream ended without ${missing}`,
  );
}
