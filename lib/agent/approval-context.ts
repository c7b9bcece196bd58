import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import { messageText } from "../model-view/index.js";
import type { ApprovalContext, ApprovalContextCall } from "../store/approval-store.js";

/** Earlier calls of the turn an approval shows (the latest; the rest are counted). */
export const APPROVAL_CONTEXT_CALLS = 5;
/** Characters of one earlier call's arguments an approval shows. */
export const APPROVAL_CONTEXT_ARGS_CHARS = 300;
/** Characters of one earlier call's output an approval shows. */
export const APPROVAL_CONTEXT_OUTPUT_CHARS = 600;

/**
 * Control and format characters (Unicode Cc and Cf: bidirectional overrides and isolates,
 * zero-width characters, the soft hyphen, the byte-order mark) and the line and paragraph
 * separators: what could hide or reorder text in front of an approver. Each becomes one space.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/**
 * A compact excerpt of untrusted text, for an approver to read: hidden characters replaced, runs of
 * blanks and newlines made one space, cut to `max` characters (never inside a surrogate pair) with
 * the length it had. Plain text: each view escapes it for its format (Slack mrkdwn, an Adaptive
 * Card, HTML). Linear in the text.
 */
export function excerptText(text: string, max: number): string {
  const flat = text.replace(HIDDEN, " ").replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  let end = max;
  const code = flat.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${flat.slice(0, end)}… (${flat.length.toLocaleString("en-US")} characters)`;
}

/** The messages of the turn being run: those after the thread's last question. */
export function currentTurnMessages(messages: readonly BaseMessage[]): BaseMessage[] {
  let start = messages.length;
  while (start > 0 && messages[start - 1].getType() !== "human") start -= 1;
  return messages.slice(start);
}

/**
 * What the turn did before a call that waits: each earlier call that ran (tool, arguments, output,
 * and whether the tool's output is untrusted), the latest {@link APPROVAL_CONTEXT_CALLS} of them,
 * and whether any untrusted output was read. Pure.
 */
export function approvalContextOf(turn: readonly BaseMessage[], isUntrusted: (toolName: string) => boolean): ApprovalContext {
  const argsById = new Map<string, unknown>();
  const calls: ApprovalContextCall[] = [];
  for (const message of turn) {
    if (message.getType() === "ai") {
      for (const call of (message as AIMessage).tool_calls ?? []) if (call.id) argsById.set(call.id, call.args);
    } else if (message.getType() === "tool") {
      const result = message as ToolMessage;
      const tool = result.name ?? "unknown";
      calls.push({
        tool,
        args: excerptText(JSON.stringify(argsById.get(result.tool_call_id) ?? {}), APPROVAL_CONTEXT_ARGS_CHARS),
        output: excerptText(messageText(result.content), APPROVAL_CONTEXT_OUTPUT_CHARS),
        untrusted: isUntrusted(tool),
      });
    }
  }
  const kept = calls.slice(-APPROVAL_CONTEXT_CALLS);
  return { readUntrusted: calls.some((c) => c.untrusted), calls: kept, omittedCalls: calls.length - kept.length };
}
