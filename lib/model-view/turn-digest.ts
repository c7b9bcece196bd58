import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import { messageText } from "./message-text.js";
import { READ_TOOL_OUTPUT_TOOL } from "./tool-output-notice.js";
import { countTextTokens } from "./token-counter.js";
import { offloadedArtifact } from "./tool-output-artifact.js";
import type { TurnDigestPolicy } from "./types.js";

/** The digest a kept finished turn shows after its answer when `ModelViewPolicy.turnDigest` is set. */
export const DEFAULT_TURN_DIGEST: TurnDigestPolicy = { recentTurns: 2, outputTokens: 200, argsChars: 400 };

/** Opens the digest, so the model can tell it from what it said. */
export const TURN_DIGEST_HEADING = "[Tool calls behind this answer, kept for follow-ups; not part of the answer:]";

function clipChars(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const end = /[\uD800-\uDBFF]/.test(text[chars - 1]) ? chars - 1 : chars;
  return `${text.slice(0, end)}…`;
}

/** The output's first whole lines within `tokens`, and how many lines were left out. */
function headLines(output: string, tokens: number): string {
  const lines = output.split("\n");
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    const cost = countTextTokens(line) + 1;
    if (used + cost > tokens) break;
    kept.push(line);
    used += cost;
  }
  const rest = lines.length - kept.length;
  return rest === 0 ? kept.join("\n") : `${kept.join("\n")}\n… ${rest} more line${rest === 1 ? "" : "s"} not shown`;
}

/**
 * The digest of a finished turn's tool exchange (`messages` is the turn, from its question): each
 * call's tool and arguments; for an offloaded output its handle for `read_tool_output`; and, in a
 * recent turn, the output's first lines. Empty when the turn called no tool. A turn's digest depends
 * only on the turn and on whether it is recent, so the history's text changes only when a turn stops
 * being recent.
 */
export function turnDigest(messages: readonly BaseMessage[], policy: TurnDigestPolicy, recent: boolean): string {
  const results = new Map<string, ToolMessage>();
  for (const m of messages) if (m.type === "tool") results.set((m as ToolMessage).tool_call_id, m as ToolMessage);
  const lines: string[] = [];
  for (const m of messages) {
    if (m.type !== "ai") continue;
    for (const call of (m as AIMessage).tool_calls ?? []) {
      lines.push(`- ${call.name} ${clipChars(JSON.stringify(call.args ?? {}), policy.argsChars)}`);
      const result = call.id === undefined ? undefined : results.get(call.id);
      if (!result) continue;
      const artifact = offloadedArtifact(result);
      if (artifact) {
        lines.push(`  output: ${artifact.tokens} tokens, stored as ${artifact.handle}; read it with ${READ_TOOL_OUTPUT_TOOL} (a line range or a search).`);
      } else if (recent && policy.outputTokens > 0) {
        lines.push(
          headLines(messageText(result.content), policy.outputTokens)
            .split("\n")
            .map((line) => `  ${line}`)
            .join("\n"),
        );
      }
    }
  }
  return lines.length === 0 ? "" : `${TURN_DIGEST_HEADING}\n${lines.join("\n")}`;
}
