import { ChatBedrockConverse } from "@langchain/aws";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ModelConfig } from "../config/config.js";
import { ModelCredentialsError } from "../errors.js";
import { bedrockTokenCounter, type ModelTokenCounter } from "./bedrock-token-counter.js";
import { LocalChatModel } from "./local-chat-model.js";
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

/** Bedrock's CountTokens through the chat model's own client, when the model is a Bedrock one. */
export function createModelTokenCounter(model: BaseChatModel, modelId: string): ModelTokenCounter | undefined {
  return model instanceof ChatBedrockConverse ? bedrockTokenCounter(model.client, modelId) : undefined;
}

/** AWS SDK errors that mean this process may not call the model: no credentials, or credentials Bedrock refuses. */
const CREDENTIAL_ERROR_NAMES = new Set(["CredentialsProviderError", "AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"]);

/** A model call's credential failure as a `ModelCredentialsError` that says what to do; any other error as it is. */
export function modelCallError(error: unknown): unknown {
  if (!(error instanceof Error) || !CREDENTIAL_ERROR_NAMES.has(error.name)) return error;
  return new ModelCredentialsError(
    `the model cannot be called with this process's AWS credentials (${error.name}); give the function or process Bedrock access ` +
      "(README, Troubleshooting)",
    { cause: error },
  );
}
