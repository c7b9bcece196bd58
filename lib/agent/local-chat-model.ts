import { createHash } from "node:crypto";
import { BaseChatModel, type BaseChatModelParams } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, type BaseMessage, type ToolMessage } from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { messageText } from "../model-view/message-text.js";
import { countMessagesTokens, countTextTokens } from "../model-view/token-counter.js";
import { refersBack } from "./back-references.js";

/** A tool as handed to `bindTools`, in the OpenAI function shape every LangChain chat model accepts. */
export interface FunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** How much of a tool result the local model quotes in its answer. */
const QUOTE_CHARS = 600;

/** Tokens in and out as the local tokenizer counts them; the model reports them as Bedrock would. */
function usageOf(messages: BaseMessage[], answer: AIMessage) {
  const inputTokens = countMessagesTokens(messages);
  const outputTokens = countTextTokens(messageText(answer.content)) + countTextTokens(JSON.stringify(answer.tool_calls ?? []));
  return { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
}

function isType(message: BaseMessage, type: string): boolean {
  return message.getType() === type;
}

/** Deepest nesting of objects and arrays taken as arguments: deeper JSON cannot even be serialised back (it overflows the stack). */
export const MAX_ARGUMENT_DEPTH = 32;

/** What the latest message asks for: a call, or a call whose arguments could not be read. */
type RequestedCall = { kind: "call"; name: string; args: Record<string, unknown> } | { kind: "malformed"; tool: FunctionTool; problem: string };

/**
 * `tool_name {json}` anywhere in the text names a call with those arguments. A JSON object that
 * does not parse is reported rather than passed over, so the user learns the tool was not called.
 */
function requestedCall(text: string, tools: FunctionTool[]): RequestedCall | undefined {
  for (const tool of tools) {
    const name = tool.function.name;
    const at = text.indexOf(name);
    if (at < 0) continue;
    const rest = text.slice(at + name.length).trimStart();
    if (!rest.startsWith("{")) continue;
    const object = balancedObject(rest);
    if ("problem" in object) return { kind: "malformed", tool, problem: object.problem };
    try {
      return { kind: "call", name, args: JSON.parse(object.json) as Record<string, unknown> };
    } catch (error) {
      return { kind: "malformed", tool, problem: `the arguments are not valid JSON (${(error as Error).message})` };
    }
  }
  return undefined;
}

/** The object at the start of `text`, up to its matching brace; one pass, strings skipped. */
function balancedObject(text: string): { json: string } | { problem: string } {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") {
      if (++depth > MAX_ARGUMENT_DEPTH) return { problem: `the arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels` };
    } else if ((ch === "}" || ch === "]") && --depth === 0) {
      return { json: text.slice(0, i + 1) };
    }
  }
  return { problem: inString ? "a string in the arguments is not closed" : "the JSON object of arguments is not closed (a } is missing)" };
}

/** The arguments a tool takes, from its JSON schema: `{"sql": string}`, optional ones marked with `?`. */
export function describeArguments(tool: FunctionTool): string {
  const { properties, required } = tool.function.parameters as { properties?: Record<string, { type?: unknown }>; required?: string[] };
  const fields = Object.entries(properties ?? {}).map(([field, schema]) => {
    const type = typeof schema.type === "string" ? schema.type : "value";
    return `"${field}"${required?.includes(field) ? "" : "?"}: ${type}`;
  });
  return `{${fields.join(", ")}}`;
}

/** Deterministic, and distinct across turns because the view it is derived from differs. */
function callId(messages: BaseMessage[], name: string): string {
  const hash = createHash("sha256");
  for (const m of messages) hash.update(m.getType()).update("\0").update(messageText(m.content)).update("\0");
  return `local-${name}-${hash.digest("hex").slice(0, 16)}`;
}

/** Facts stated as "my X is Y" in earlier questions, latest first wins. */
function recalledFact(question: string, earlierQuestions: string[]): string | undefined {
  const asked = /what(?:'s| is) my ([a-z][a-z ]{0,30}?)\s*\??$/i.exec(question.trim());
  if (!asked) return undefined;
  const subject = asked[1].toLowerCase();
  for (const earlier of [...earlierQuestions].reverse()) {
    const stated = new RegExp(`my ${subject} is ([^.,!?\\n]+)`, "i").exec(earlier);
    if (stated) return `Your ${subject} is ${stated[1].trim()}.`;
  }
  return undefined;
}

/** The tool that searches turns out of sight. */
const SEARCH_TOOL = "search_conversation";

/**
 * Searches the conversation when the question points back as people phrase it ("I mentioned
 * before…", "remind me…", "what did we say about…", "what's our budget?"; `back-references.ts`),
 * but only while the system part says turns are out of sight.
 */
function recallSearch(messages: BaseMessage[], question: string, tools: FunctionTool[]): AIMessage | undefined {
  const system = messages.find((m) => isType(m, "system"));
  if (!tools.some((t) => t.function.name === SEARCH_TOOL) || !system || !messageText(system.content).includes(SEARCH_TOOL)) return undefined;
  if (!refersBack(question)) return undefined;
  const call = { id: callId(messages, SEARCH_TOOL), name: SEARCH_TOOL, args: { query: question.trim() }, type: "tool_call" as const };
  return new AIMessage({ content: "", tool_calls: [call] });
}

function answerFromToolResults(results: ToolMessage[], tools: FunctionTool[], alreadyRead: Set<string>, question: string): AIMessage {
  const found = results.filter((r) => r.name === SEARCH_TOOL).map((r) => messageText(r.content).replace(/^Assistant: .*$/gm, ""));
  const fact = found.length > 0 ? recalledFact(question, found) : undefined;
  if (fact) return new AIMessage(fact);
  const canRead = tools.some((t) => t.function.name === "read_tool_output");
  for (const result of results) {
    const handle = /\bhandle\W+([\w:.-]+)/i.exec(messageText(result.content))?.[1];
    if (canRead && handle && !alreadyRead.has(handle)) {
      return new AIMessage({
        content: "",
        tool_calls: [{ id: `${result.tool_call_id}-read`, name: "read_tool_output", args: { handle, startLine: 1, lineCount: 20 }, type: "tool_call" }],
      });
    }
  }
  const parts = results.map((r) => {
    const text = messageText(r.content).trim();
    const quoted = text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS)}…` : text;
    return `${r.name ?? "The tool"} returned:\n${quoted}`;
  });
  return new AIMessage(`Here is what I found.\n\n${parts.join("\n\n")}`);
}

/** A conversation the offline model answers from what it is shown, no tool involved: the last question recalls the first. */
export const LOCAL_MODEL_EXAMPLES = ["My name is Ada.", "What is my name?"] as const;

/**
 * The offline model: deterministic, no network. It calls a tool when the latest user
 * message names one followed by a JSON object of arguments, answers from tool results
 * once they arrive, and otherwise answers from the conversation it is shown, so the
 * whole loop (memory and tools) can be driven without a cloud account.
 */
export class LocalChatModel extends BaseChatModel {
  readonly tools: FunctionTool[];

  constructor(fields: BaseChatModelParams & { tools?: FunctionTool[] } = {}) {
    super(fields);
    this.tools = fields.tools ?? [];
  }

  _llmType(): string {
    return "threadwise-local";
  }

  override bindTools(tools: FunctionTool[]): LocalChatModel {
    return new LocalChatModel({ tools: [...this.tools, ...tools] });
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const message = this.respond(messages);
    message.usage_metadata = usageOf(messages, message);
    return { generations: [{ message, text: messageText(message.content) }] };
  }

  /** The same answer as `_generate`, its text a word at a time, its tool calls and usage in the last chunk. */
  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const message = this.respond(messages);
    for (const word of messageText(message.content).match(/\S+\s*|\s+/g) ?? []) {
      options.signal?.throwIfAborted();
      const chunk = new ChatGenerationChunk({ text: word, message: new AIMessageChunk({ content: word }) });
      yield chunk;
      await runManager?.handleLLMNewToken(word, undefined, undefined, undefined, undefined, { chunk });
    }
    const tool_call_chunks = (message.tool_calls ?? []).map((call, index) => ({
      type: "tool_call_chunk" as const,
      id: call.id,
      name: call.name,
      args: JSON.stringify(call.args),
      index,
    }));
    yield new ChatGenerationChunk({ text: "", message: new AIMessageChunk({ content: "", tool_call_chunks, usage_metadata: usageOf(messages, message) }) });
  }

  private respond(messages: BaseMessage[]): AIMessage {
    const lastHuman = messages.findLastIndex((m) => isType(m, "human"));
    if (lastHuman < 0) return new AIMessage("I have no question to answer yet.");
    const active = messages.slice(lastHuman + 1);
    const trailingResults: ToolMessage[] = [];
    for (let i = messages.length - 1; i > lastHuman && isType(messages[i], "tool"); i--) trailingResults.unshift(messages[i] as ToolMessage);
    if (trailingResults.length > 0) {
      const alreadyRead = new Set(
        active.flatMap((m) => ((m as AIMessage).tool_calls ?? []).filter((c) => c.name === "read_tool_output").map((c) => String(c.args.handle))),
      );
      return answerFromToolResults(trailingResults, this.tools, alreadyRead, messageText(messages[lastHuman].content));
    }
    const question = messageText(messages[lastHuman].content);
    const call = requestedCall(question, this.tools);
    if (call?.kind === "call") {
      return new AIMessage({ content: "", tool_calls: [{ id: callId(messages, call.name), name: call.name, args: call.args, type: "tool_call" }] });
    }
    if (call?.kind === "malformed") {
      const name = call.tool.function.name;
      return new AIMessage(`I did not call ${name}: ${call.problem}. ${name} takes a JSON object like ${describeArguments(call.tool)}.`);
    }
    const earlier = messages
      .slice(0, lastHuman)
      .filter((m) => isType(m, "human"))
      .map((m) => messageText(m.content));
    const fact = recalledFact(question, earlier);
    if (fact) return new AIMessage(fact);
    const search = recallSearch(messages, question, this.tools);
    if (search) return search;
    const memory = earlier.length
      ? ` I can see ${earlier.length} earlier question${earlier.length === 1 ? "" : "s"} in this conversation; the last was: "${earlier[earlier.length - 1]}".`
      : " This is the first question I can see in this conversation.";
    return new AIMessage(`You asked: "${question}".${memory}`);
  }
}
