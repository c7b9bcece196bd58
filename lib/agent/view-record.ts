import type { BaseMessage } from "@langchain/core/messages";
import { countMessageTokens } from "../model-view/index.js";
import type { ViewMessage } from "../store/turn-store.js";

function textOf(message: BaseMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  return content
    .map((block) => ("text" in block && typeof block.text === "string" ? block.text : ""))
    .filter(Boolean)
    .join("\n");
}

const ROLE_BY_TYPE: Record<string, ViewMessage["role"]> = { system: "system", human: "user", ai: "assistant", tool: "tool" };

/** The view exactly as sent, in the channel-neutral shape the turn record keeps, with each message's tokens as the view counted them. */
export function toViewMessages(messages: readonly BaseMessage[]): (ViewMessage & { tokens: number })[] {
  return messages.map((message) => {
    const role = ROLE_BY_TYPE[message.getType()] ?? "user";
    const record: ViewMessage & { tokens: number } = { role, content: textOf(message), tokens: countMessageTokens(message) };
    const toolCalls = (message as { tool_calls?: { id?: string; name: string; args: unknown }[] }).tool_calls;
    if (role === "assistant" && toolCalls?.length) {
      record.toolCalls = toolCalls.map((c) => ({ id: c.id ?? "", name: c.name, args: c.args }));
    }
    if (role === "tool") {
      const tool = message as { tool_call_id?: string; name?: string };
      record.toolCallId = tool.tool_call_id;
      if (tool.name) record.toolName = tool.name;
    }
    return record;
  });
}
