import { SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { countMessagesTokens } from "./token-counter.js";
import type { ModelView, ModelViewPolicy } from "./types.js";

/**
 * Builds the messages for one model call from the thread's messages and a policy.
 * Pure: never mutates `messages`.
 */
export function buildModelView(messages: readonly BaseMessage[], policy: ModelViewPolicy): ModelView {
  const started = performance.now();
  const view = [new SystemMessage(policy.systemPrompt), ...messages];
  const stateTokens = countMessagesTokens(messages);
  return {
    messages: view,
    stats: {
      stateMessages: messages.length,
      stateTokens,
      viewMessages: view.length,
      viewTokens: countMessagesTokens(view),
      finishedTurnsInState: 0,
      finishedTurnsKept: 0,
      omittedOutputs: [],
      budget: policy.totalBudget,
      buildMs: performance.now() - started,
    },
  };
}
