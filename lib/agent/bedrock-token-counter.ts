import {
  CountTokensCommand,
  type BedrockRuntimeClient,
  type ContentBlock,
  type Message,
  type SystemContentBlock,
  type ToolUseBlock,
} from "@aws-sdk/client-bedrock-runtime";
import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import type { FunctionTool } from "./local-chat-model.js";

/** A JSON value as the SDK types it (tool inputs and schemas). */
type DocumentType = NonNullable<ToolUseBlock["input"]>;

/** Counts a request in the model's own tokens. */
export type ModelTokenCounter = (messages: readonly BaseMessage[], tools: readonly FunctionTool[]) => Promise<number>;

function texts(message: BaseMessage): { text: string }[] {
  const { content } = message;
  if (typeof content === "string") return content.length > 0 ? [{ text: content }] : [];
  return content.flatMap((block) => (block.type === "text" && typeof block.text === "string" ? [{ text: block.text }] : []));
}

/**
 * A model view in the Converse shape, as `ChatBedrockConverse` sends it (system lifted out, tool
 * results as user `toolResult` blocks, consecutive results in one message), for CountTokens. Only
 * what a view holds is converted: text, tool calls and text results; cache points count nothing.
 */
function converseInput(messages: readonly BaseMessage[]): { system: SystemContentBlock[]; messages: Message[] } {
  const system: SystemContentBlock[] = [];
  const converse: Message[] = [];
  for (const message of messages) {
    switch (message.getType()) {
      case "system":
        system.push(...texts(message));
        break;
      case "human":
        converse.push({ role: "user", content: texts(message) });
        break;
      case "ai": {
        const uses: ContentBlock[] = ((message as AIMessage).tool_calls ?? []).map((call) => ({
          toolUse: { toolUseId: call.id, name: call.name, input: call.args as DocumentType },
        }));
        converse.push({ role: "assistant", content: [...texts(message), ...uses] });
        break;
      }
      case "tool": {
        const result: ContentBlock = { toolResult: { toolUseId: (message as ToolMessage).tool_call_id, content: texts(message) } };
        const previous = converse[converse.length - 1];
        if (previous?.role === "user" && previous.content?.some((block) => block.toolResult)) previous.content.push(result);
        else converse.push({ role: "user", content: [result] });
        break;
      }
    }
  }
  return { system, messages: converse };
}

/** Bedrock's CountTokens for `modelId` through `client` (the chat model's own, so it goes where the model calls go). */
export function bedrockTokenCounter(client: BedrockRuntimeClient, modelId: string): ModelTokenCounter {
  return async (messages, tools) => {
    const input = converseInput(messages);
    const toolConfig = tools.length
      ? {
          tools: tools.map((t) => ({
            toolSpec: { name: t.function.name, description: t.function.description, inputSchema: { json: t.function.parameters as DocumentType } },
          })),
        }
      : undefined;
    const { inputTokens } = await client.send(new CountTokensCommand({ modelId, input: { converse: { ...input, toolConfig } } }));
    return inputTokens ?? 0;
  };
}
