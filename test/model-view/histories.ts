import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ContextBudgetExceededError } from "../../lib/errors.js";
import { buildModelView, type ModelView, type ModelViewPolicy } from "../../lib/model-view/index.js";

/** A policy roomy enough that only the rule under test shapes the view. */
export function policy(overrides: Partial<ModelViewPolicy> = {}): ModelViewPolicy {
  return { systemPrompt: "You answer questions about sales data.", finishedTurns: 6, toolOutputTokens: 2_000, totalBudget: 24_000, ...overrides };
}

export function user(text: string): HumanMessage {
  return new HumanMessage(text);
}

export function answer(text: string): AIMessage {
  return new AIMessage(text);
}

/** An assistant message making tool calls, `[id, name]` each; `text` defaults to none. */
export function calls(list: [id: string | undefined, name: string][], text = ""): AIMessage {
  return new AIMessage({
    content: text,
    tool_calls: list.map(([id, name]) => ({ id, name, args: { query: `${name} ${id ?? "?"}` }, type: "tool_call" as const })),
  });
}

export function result(id: string, content: string, name = "sql_query"): ToolMessage {
  return new ToolMessage({ content, tool_call_id: id, name });
}

/** A result whose output was offloaded: a preview in `content`, the artifact reference beside it. */
export function offloaded(id: string, handle: string, tokens: number, name = "sql_query"): ToolMessage {
  const preview = "region,revenue\nnorth,1200\nsouth,900";
  return new ToolMessage({ content: preview, tool_call_id: id, name, artifact: { handle, bytes: tokens * 4, tokens, preview } });
}

/** Text of roughly `n` cl100k tokens ("row" and " row" are one token each). */
export function rows(n: number): string {
  return `row${" row".repeat(Math.max(0, n - 1))}`;
}

/** Everything about the messages that a mutation could change, as a string. */
export function fingerprint(messages: readonly BaseMessage[]): string {
  return JSON.stringify(
    messages.map((m) => ({
      type: m.type,
      content: m.content,
      id: m.id,
      toolCalls: (m as AIMessage).tool_calls,
      toolCallId: (m as ToolMessage).tool_call_id,
      name: m.name,
      artifact: (m as ToolMessage).artifact,
      status: (m as ToolMessage).status,
    })),
  );
}

export function toolCallIds(message: BaseMessage): string[] {
  return ((message as AIMessage).tool_calls ?? []).map((c) => c.id ?? "");
}

/** The view, or undefined when the budget cannot be met (the only failure allowed). */
export function viewOrBudgetError(messages: BaseMessage[], policy: ModelViewPolicy): ModelView | undefined {
  try {
    return buildModelView(messages, policy);
  } catch (error) {
    if (error instanceof ContextBudgetExceededError) return undefined;
    throw error;
  }
}
