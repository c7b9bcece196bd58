/**
 * The context policies compared on the suite. Each is a function from the thread to the messages
 * one model call is sent, with what the policy's framework offers the model to reach the rest.
 * The other frameworks' policies are re-implemented from their published source, with the settings
 * their docs give, cited at each; they see the raw thread (every output inline), as their sessions
 * keep it. Threadwise sees the thread as it checkpoints it (large outputs offloaded).
 */
import { type AIMessage, SystemMessage, ToolMessage, trimMessages, type BaseMessage } from "@langchain/core/messages";
import { DEFAULT_SYSTEM_PROMPT } from "../../lib/agent/system-prompt.js";
import {
  DEFAULT_VIEW_FINISHED_TURNS,
  DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
  DEFAULT_VIEW_TOOL_OUTPUT_TOKENS,
  DEFAULT_VIEW_TOTAL_BUDGET,
} from "../../lib/config/view-config.js";
import { archivePlan } from "../../lib/agent/working-set.js";
import {
  buildModelView,
  countMessagesTokens,
  countMessageTokens,
  ledgerAfterTurns,
  messageText,
  standingAfterTurns,
  summaryAfterTurns,
  EMPTY_OUT_OF_SIGHT_SUMMARY,
  type ModelViewPolicy,
} from "../../lib/model-view/index.js";
import { SEARCH_CONVERSATION_NAME } from "../../lib/recall/search-conversation-tool.js";

/** What a policy gives the model besides the messages: the tools that reach what the view left out. */
export interface Reach {
  /** `search_conversation` over the finished turns out of sight (Threadwise). */
  search: boolean;
  /** `read_tool_output` on the handles the view names (Threadwise). */
  readToolOutput: boolean;
  /** Files a framework wrote outputs to, readable with its own read tool (Deep Agents' `read_file`): path → content. */
  files?: ReadonlyMap<string, string>;
}

export interface PolicyOutcome {
  messages: BaseMessage[];
  reach: Reach;
}

export interface PolicyInput {
  /** As Threadwise checkpoints it. */
  thread: readonly BaseMessage[];
  /** Every output inline. */
  rawThread: readonly BaseMessage[];
}

export interface Policy {
  /** Short name for the tables. */
  name: string;
  /** Its setting, as the table shows it. */
  setting: string;
  /** The setting used in the per-kind table (the framework's documented default, or the product's). */
  isDefault: boolean;
  apply(input: PolicyInput): PolicyOutcome | Promise<PolicyOutcome>;
}

const NO_REACH: Reach = { search: false, readToolOutput: false };
const system = () => new SystemMessage(DEFAULT_SYSTEM_PROMPT);

/** Turn boundaries: the index of each human message. */
function turnStarts(messages: readonly BaseMessage[]): number[] {
  const starts: number[] = [];
  messages.forEach((m, i) => {
    if (m.type === "human") starts.push(i);
  });
  return starts;
}

function replaceAt(messages: BaseMessage[], i: number, content: string): void {
  const old = messages[i] as ToolMessage;
  messages[i] = new ToolMessage({ content, tool_call_id: old.tool_call_id, name: old.name, status: old.status });
}

/** Full replay: every stored message, every output inline, as stock LangGraph's `MessagesAnnotation` sends it. */
export function fullReplay(): Policy {
  return {
    name: "full replay",
    setting: "everything",
    isDefault: true,
    apply: ({ rawThread }) => ({ messages: [system(), ...rawThread], reach: NO_REACH }),
  };
}

/**
 * The seed article's policy as published: the last N finished turns as (question, final answer)
 * pairs, their tool calls and results dropped; the active turn whole; a tool output over the
 * per-output threshold replaced by the notice "This tool output was too large to include fully.
 * Request a narrower or summarized view."; no total budget; no retrieval. The article gives no N;
 * N = 6 is Threadwise's default, which started from it.
 */
export function seedPolicy(pairs = 6, outputTokens = DEFAULT_VIEW_TOOL_OUTPUT_TOKENS): Policy {
  return {
    name: "seed article",
    setting: `last ${pairs} pairs`,
    isDefault: pairs === 6,
    apply: ({ rawThread }) => {
      const starts = turnStarts(rawThread);
      const active = starts[starts.length - 1];
      const out: BaseMessage[] = [system()];
      for (let t = Math.max(0, starts.length - 1 - pairs); t < starts.length - 1; t++) {
        const end = starts[t + 1];
        out.push(rawThread[starts[t]]);
        const answer = rawThread.slice(starts[t], end).findLast((m) => m.type === "ai" && ((m as AIMessage).tool_calls ?? []).length === 0);
        if (answer) out.push(answer);
      }
      for (let i = active; i < rawThread.length; i++) {
        const m = rawThread[i];
        if (m.type === "tool" && countMessageTokens(m) > outputTokens) {
          const t = m as ToolMessage;
          out.push(
            new ToolMessage({
              content: "This tool output was too large to include fully. Request a narrower or summarized view.",
              tool_call_id: t.tool_call_id,
              name: t.name,
            }),
          );
        } else out.push(m);
      }
      return { messages: out, reach: NO_REACH };
    },
  };
}

/** The product's policy as `lib/app.ts` builds it from the defaults in `lib/config`, with the extra fields given. */
export function threadwisePolicy(overrides: Partial<ModelViewPolicy> = {}): ModelViewPolicy {
  return {
    systemPrompt: DEFAULT_SYSTEM_PROMPT,
    finishedTurns: DEFAULT_VIEW_FINISHED_TURNS,
    historyBlockTurns: DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
    toolOutputTokens: DEFAULT_VIEW_TOOL_OUTPUT_TOKENS,
    totalBudget: DEFAULT_VIEW_TOTAL_BUDGET,
    outOfSight: { toolName: SEARCH_CONVERSATION_NAME },
    ...overrides,
  };
}

/** Threadwise: `buildModelView` with the product's defaults; the model has `search_conversation` and `read_tool_output`. */
export function threadwise(name: string, policy: ModelViewPolicy, isDefault: boolean, setting = `${policy.finishedTurns} turns`): Policy {
  return {
    name,
    setting,
    isDefault,
    apply: ({ thread }) => ({ messages: threadwiseView(thread, policy), reach: { search: true, readToolOutput: true } }),
  };
}

/**
 * The view the product sends for this thread: the finished turns before the window archived out of
 * it as the graph's archive step does (`archivePlan`, a block at a time), their time anchors kept in
 * the ledger (`ledgerAfterTurns`) when the policy keeps one, then `buildModelView` on what stays.
 */
export function threadwiseView(thread: readonly BaseMessage[], policy: ModelViewPolicy): BaseMessage[] {
  const plan = archivePlan(thread, 0, policy);
  if (!plan) return buildModelView(thread, policy).messages;
  const parameterLedger = policy.parameterLedger ? ledgerAfterTurns([], plan.turns, policy.parameterLedger) : [];
  const standingLedger = policy.standingLedger ? standingAfterTurns([], plan.turns, policy.standingLedger) : [];
  const outOfSight = summaryAfterTurns(EMPTY_OUT_OF_SIGHT_SUMMARY, plan.turns);
  return buildModelView(plan.kept, policy, { archivedTurns: plan.archivedTurns, parameterLedger, standingLedger, outOfSight }).messages;
}

/**
 * LangChain's `trimMessages` from `@langchain/core/messages` itself (not re-implemented), as its
 * docs use it for chat history ("Trim messages", https://js.langchain.com/docs/how_to/trim_messages/):
 * `strategy: "last"`, `maxTokens`, `startOn: "human"`, `endOn: ["human", "tool"]`, `includeSystem: true`,
 * counted with the product's token counter. The budget is Threadwise's (`VIEW_TOTAL_BUDGET`) unless given.
 */
export function langchainTrim(maxTokens = DEFAULT_VIEW_TOTAL_BUDGET): Policy {
  return {
    name: "LangChain trimMessages",
    setting: `${maxTokens.toLocaleString("en-US")} tokens`,
    isDefault: maxTokens === DEFAULT_VIEW_TOTAL_BUDGET,
    apply: async ({ rawThread }) => {
      const messages = await trimMessages([system(), ...rawThread], {
        maxTokens,
        strategy: "last",
        tokenCounter: (ms: BaseMessage[]) => countMessagesTokens(ms),
        startOn: "human",
        endOn: ["human", "tool"],
        includeSystem: true,
      });
      // When even the last message is over the budget, @langchain/core 1.x leaves holes in the list it returns.
      return { messages: messages.filter((m): m is BaseMessage => m !== undefined), reach: NO_REACH };
    },
  };
}

/**
 * LangChain v1 `ClearToolUsesEdit` (`contextEditingMiddleware`, langchain-ai/langchainjs
 * `libs/langchain/src/agents/middleware/contextEditing.ts`): when the messages count over
 * `triggerTokens` (default 100,000), tool results other than the `keep` (default 3) most recent are
 * replaced by the placeholder `[cleared]`, oldest first, until under the trigger if `clearAtLeast`
 * is 0 (the default: it clears every candidate); tool inputs kept (`clearToolInputs: false`).
 */
export function clearToolUses(triggerTokens = 100_000, keep = 3): Policy {
  return {
    name: "LangChain ClearToolUsesEdit",
    setting: `trigger ${triggerTokens.toLocaleString("en-US")}, keep ${keep}`,
    isDefault: triggerTokens === 100_000 && keep === 3,
    apply: ({ rawThread }) => {
      const messages = [system(), ...rawThread];
      if (countMessagesTokens(messages) <= triggerTokens) return { messages, reach: NO_REACH };
      const candidates = messages.map((m, i) => (m.type === "tool" ? i : -1)).filter((i) => i >= 0);
      const toClear = keep >= candidates.length ? [] : candidates.slice(0, candidates.length - keep);
      for (const i of toClear) replaceAt(messages, i, "[cleared]");
      return { messages, reach: NO_REACH };
    },
  };
}

/**
 * Strands Agents `SlidingWindowConversationManager` (strands-agents/sdk-python
 * `src/strands/agent/conversation_manager/sliding_window_conversation_manager.py`, defaults
 * `window_size=40`, `should_truncate_results=True`): after each call the oldest messages beyond the
 * window are trimmed, the trim point moved on while it would start on a tool result or on a tool use
 * whose result is cut; on a context overflow (Claude's 200,000-token window here) the latest message
 * with tool results has them replaced by "The tool result was too large!" before more is trimmed.
 */
export function strandsWindow(windowSize = 40, contextWindow = 200_000): Policy {
  return {
    name: "Strands sliding window",
    setting: `${windowSize} messages`,
    isDefault: windowSize === 40,
    apply: ({ rawThread }) => {
      let messages = [...rawThread];
      const trim = (count: number) => {
        let index = count;
        while (index < messages.length) {
          const m = messages[index];
          if (m.type === "tool") index++;
          else if (m.type === "ai" && ((m as AIMessage).tool_calls ?? []).length > 0 && messages[index + 1]?.type !== "tool") index++;
          else break;
        }
        messages = messages.slice(index);
      };
      if (messages.length > windowSize) trim(messages.length - windowSize);
      const truncated = new Set<number>();
      while (countMessagesTokens([system(), ...messages]) > contextWindow) {
        const last = messages.findLastIndex((m, i) => m.type === "tool" && !truncated.has(i));
        if (last >= 0 && messageText(messages[last].content) !== "The tool result was too large!") {
          // The whole message with tool results: every result of that step.
          for (let i = last; i >= 0 && messages[i].type === "tool"; i--) {
            replaceAt(messages, i, "The tool result was too large!");
            truncated.add(i);
          }
          continue;
        }
        trim(messages.length <= windowSize ? 2 : messages.length - windowSize);
      }
      return { messages: [system(), ...messages], reach: NO_REACH };
    },
  };
}

/**
 * OpenAI Agents SDK `ToolOutputTrimmer` (openai/openai-agents-js
 * `packages/agents-extensions/src/toolOutputTrimmer.ts`, defaults `recentTurns: 2`,
 * `maxOutputChars: 500`, `previewChars: 200`, every tool trimmable): before each call, tool outputs
 * before the second-last user message and longer than 500 characters become
 * `[Trimmed: NAME output — N chars → 200 char preview]` and their first 200 characters. The session
 * keeps every item otherwise.
 */
export function openAiTrimmer(recentTurns = 2, maxOutputChars = 500, previewChars = 200): Policy {
  return {
    name: "OpenAI ToolOutputTrimmer",
    setting: `${recentTurns} recent turns`,
    isDefault: recentTurns === 2,
    apply: ({ rawThread }) => {
      const messages = [...rawThread];
      const starts = turnStarts(messages);
      const boundary = starts.length >= recentTurns ? starts[starts.length - recentTurns] : 0;
      for (let i = 0; i < boundary; i++) {
        const m = messages[i];
        if (m.type !== "tool") continue;
        const output = messageText(m.content);
        if (output.length <= maxOutputChars) continue;
        const summary =
          `[Trimmed: ${(m as ToolMessage).name ?? "unknown_tool"} output \u2014 ${output.length} chars \u2192 ${previewChars} ` +
          `char preview]\n${output.slice(0, previewChars)}...`;
        if (summary.length < output.length) replaceAt(messages, i, summary);
      }
      return { messages: [system(), ...messages], reach: NO_REACH };
    },
  };
}

/**
 * Deep Agents' eviction of large tool results (langchain-ai/deepagents `FilesystemMiddleware`,
 * `tool_token_limit_before_evict=20000`, counted as 4 characters a token): a result over the limit is
 * written to `/large_tool_results/{tool_call_id}` in the agent's file state and replaced by
 * `TOO_LARGE_TOOL_MSG` with the result's first 10 lines; the model reads the file with `read_file`.
 * Nothing else is cut (its summarization middleware, which calls a model, is not part of this policy).
 */
export function deepAgentsEviction(tokenLimit = 20_000): Policy {
  return {
    name: "Deep Agents eviction",
    setting: `evict over ${tokenLimit.toLocaleString("en-US")} tokens`,
    isDefault: tokenLimit === 20_000,
    apply: ({ rawThread }) => {
      const files = new Map<string, string>();
      const messages = rawThread.map((m) => {
        if (m.type !== "tool") return m;
        const content = messageText(m.content);
        if (content.length <= tokenLimit * 4) return m;
        const t = m as ToolMessage;
        const path = `/large_tool_results/${t.tool_call_id}`;
        files.set(path, content);
        const sample = content
          .split("\n")
          .slice(0, 10)
          .map((line, i) => `${String(i + 1).padStart(6)}\t${line.slice(0, 2_000)}`)
          .join("\n");
        return new ToolMessage({
          content:
            `Tool result too large, the result of this tool call ${t.tool_call_id} was saved in the filesystem at this path: ${path}\n` +
            "You can read the result from the filesystem by using the read_file tool, but make sure to only read part of the result at a time.\n" +
            "You can do this by specifying an offset and limit in the read_file tool call.\n" +
            "For example, to read the first 100 lines, you can use the read_file tool with offset=0 and limit=100.\n\n" +
            `Here are the first 10 lines of the result:\n${sample}\n`,
          tool_call_id: t.tool_call_id,
          name: t.name,
        });
      });
      return { messages: [system(), ...messages], reach: { search: false, readToolOutput: false, files } };
    },
  };
}
