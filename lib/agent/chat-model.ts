import { ChatBedrockConverse } from "@langchain/aws";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ModelConfig } from "../config/config.js";
import { bedrockTokenCounter, type ModelTokenCounter } from "./bedrock-token-counter.js";
import { LocalChatModel } from "./local-chat-model.js";

/**
 * The chat model for a provider. Bedrock is reached through the real Converse client;
 * `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (read by the AWS SDK itself) can point it elsewhere.
 */
export function createChatModel(config: Pick<ModelConfig, "provider" | "bedrockModelId" | "region" | "maxOutputTokens">): BaseChatModel {
  if (config.provider === "local") return new LocalChatModel();
  return new ChatBedrockConverse({
    model: config.bedrockModelId,
    region: config.region,
    maxTokens: config.maxOutputTokens,
    temperature: 0,
  });
}

/** Bedrock's CountTokens through the chat model's own client, when the model is a Bedrock one. */
export function createModelTokenCounter(model: BaseChatModel, modelId: string): ModelTokenCounter | undefined {
  return model instanceof ChatBedrockConverse ? bedrockTokenCounter(model.client, modelId) : undefined;
}
