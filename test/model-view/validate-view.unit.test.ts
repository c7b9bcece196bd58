import { AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { InvalidModelViewError } from "../../lib/errors.js";
import { CONVERSE_RULES, validateConverseView, type ConverseRule } from "../../lib/model-view/index.js";
import { answer, calls, result, user } from "./histories.js";

interface Broken {
  rule: ConverseRule;
  message: string;
}

function broken(messages: BaseMessage[], options?: Parameters<typeof validateConverseView>[1]): Broken | undefined {
  try {
    validateConverseView(messages, options);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidModelViewError);
    const { rule, message } = error as InvalidModelViewError;
    return { rule: rule as ConverseRule, message };
  }
}

/** The rule, and a message that points at the offending message(s) of the view, e.g. "message 2". */
function breaks(rule: ConverseRule, where: string): Broken {
  return { rule, message: expect.stringContaining(where) };
}

const blocks = (...texts: string[]) => texts.map((text) => ({ type: "text" as const, text }));

describe("model view", () => {
  describe("validateConverseView", () => {
    it("returns for a view with parallel tool calls answered by consecutive tool messages", () => {
      const view = [
        new SystemMessage("s"),
        user("q1"),
        answer("a1"),
        user("q2"),
        calls([
          ["c1", "a"],
          ["c2", "b"],
        ]),
        result("c2", "y"),
        result("c1", "x"),
      ];
      expect(broken(view)).toBeUndefined();
    });

    it("returns for an assistant message that is only tool calls (empty text is not sent)", () => {
      expect(broken([user("q"), calls([["c1", "a"]], ""), result("c1", "x")])).toBeUndefined();
    });

    it("returns for messages made of content blocks, non-text blocks included", () => {
      const image = { type: "image_url" as const, image_url: { url: "data:image/png;base64,AAAA" } };
      const view = [
        new SystemMessage({ content: blocks("s1", "s2") }),
        new HumanMessage({ content: [...blocks("q"), image] }),
        new AIMessage({ content: blocks("a") }),
        new HumanMessage({ content: ["plain string block"] as never }),
      ];
      expect(broken(view)).toBeUndefined();
    });

    it("returns for a view with tool blocks when tools are configured explicitly", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), result("c1", "x")], { toolsConfigured: true })).toBeUndefined();
    });

    it("returns for a view without tool blocks when the request has no tools", () => {
      expect(broken([user("q1"), answer("a"), user("q2")], { toolsConfigured: false })).toBeUndefined();
    });

    it("throws not-empty when there is no user or assistant message", () => {
      expect(broken([new SystemMessage("s")])).toEqual(breaks(CONVERSE_RULES.notEmpty, "no user or assistant message"));
      expect(broken([])).toEqual(breaks(CONVERSE_RULES.notEmpty, "no user or assistant message"));
    });

    it("throws system-first when a system message follows the conversation", () => {
      expect(broken([user("q"), new SystemMessage("s")])).toEqual(breaks(CONVERSE_RULES.systemFirst, "message 1 is a system message"));
    });

    it("returns for several system messages before the conversation", () => {
      expect(broken([new SystemMessage("s1"), new SystemMessage("s2"), user("q")])).toBeUndefined();
    });

    it("throws first-message-user when the assistant speaks first", () => {
      expect(broken([new SystemMessage("s"), answer("hi"), user("q")])).toEqual(breaks(CONVERSE_RULES.firstMessageUser, "message 1 is the first"));
    });

    it("throws last-message-user when the view ends with the assistant", () => {
      expect(broken([user("q"), answer("a")])).toEqual(breaks(CONVERSE_RULES.lastMessageUser, "message 1 is the last"));
    });

    it("throws roles-alternate for consecutive user messages", () => {
      expect(broken([user("q1"), user("q2")])).toEqual(breaks(CONVERSE_RULES.rolesAlternate, "messages 0 and 1 are both user messages"));
    });

    it("throws roles-alternate for a tool result followed by a user message (the client does not merge them)", () => {
      expect(broken([user("q1"), calls([["c1", "a"]]), result("c1", "x"), user("q2")])).toEqual(
        breaks(CONVERSE_RULES.rolesAlternate, "messages 2 and 3 are both user messages"),
      );
    });

    it("throws roles-alternate for a tool result right after a user's question (only results merge with results)", () => {
      expect(broken([user("q"), result("c1", "x")])).toEqual(breaks(CONVERSE_RULES.rolesAlternate, "messages 0 and 1 are both user messages"));
    });

    it("throws roles-alternate for consecutive assistant messages", () => {
      expect(broken([user("q1"), answer("a"), calls([["c1", "a"]]), result("c1", "x")])).toEqual(
        breaks(CONVERSE_RULES.rolesAlternate, "messages 1 and 2 are both assistant messages"),
      );
    });

    it("throws no-empty-content for an empty user message", () => {
      expect(broken([user("")])).toEqual(breaks(CONVERSE_RULES.noEmptyContent, "message 0 has empty content"));
    });

    it("throws no-empty-content for a user message with no content blocks", () => {
      expect(broken([new HumanMessage({ content: [] })])).toEqual(breaks(CONVERSE_RULES.noEmptyContent, "message 0 has no content blocks"));
    });

    it("throws no-empty-content for an empty system prompt", () => {
      expect(broken([new SystemMessage(""), user("q")])).toEqual(breaks(CONVERSE_RULES.noEmptyContent, "message 0 has empty content"));
    });

    it("throws no-empty-content for an assistant message with neither text nor tool calls", () => {
      expect(broken([user("q1"), answer(""), user("q2")])).toEqual(breaks(CONVERSE_RULES.noEmptyContent, "message 1 has neither text nor tool calls"));
      expect(broken([user("q1"), new AIMessage({ content: [] }), user("q2")])).toEqual(
        breaks(CONVERSE_RULES.noEmptyContent, "message 1 has neither text nor tool calls"),
      );
    });

    it("throws no-empty-content for a tool result with no content blocks", () => {
      const empty = new ToolMessage({ content: [], tool_call_id: "c1" });
      expect(broken([user("q"), calls([["c1", "a"]]), empty])).toEqual(breaks(CONVERSE_RULES.noEmptyContent, "message 2 has an empty tool result"));
    });

    it("throws no-empty-content for a tool result with empty text", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), result("c1", "")])).toEqual(breaks(CONVERSE_RULES.noEmptyContent, "message 2 has empty content"));
    });

    it("throws no-blank-text for blank text in a user message", () => {
      expect(broken([user(" \n ")])).toEqual(breaks(CONVERSE_RULES.noBlankText, "message 0 has blank text"));
    });

    it("throws no-blank-text for a blank text block in a user message", () => {
      expect(broken([new HumanMessage({ content: blocks("q", "\t") })])).toEqual(breaks(CONVERSE_RULES.noBlankText, "message 0 has a blank text block"));
    });

    it("throws no-blank-text for a blank string block", () => {
      expect(broken([new HumanMessage({ content: ["q", " "] as never })])).toEqual(breaks(CONVERSE_RULES.noBlankText, "message 0 has a blank text block"));
    });

    it("throws no-blank-text for a blank text block in an assistant message", () => {
      const blank = new AIMessage({ content: blocks("ok", "  ") });
      expect(broken([user("q1"), blank, user("q2")])).toEqual(breaks(CONVERSE_RULES.noBlankText, "message 1 has a blank text block"));
    });

    it("throws no-blank-text for a blank tool result", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), result("c1", "  ")])).toEqual(breaks(CONVERSE_RULES.noBlankText, "message 2 has blank text"));
    });

    it("throws no-blank-text for a blank system prompt", () => {
      expect(broken([new SystemMessage(" "), user("q")])).toEqual(breaks(CONVERSE_RULES.noBlankText, "message 0 has blank text"));
    });

    it("throws tool-use-id for a tool call without an id", () => {
      expect(broken([user("q"), calls([[undefined, "a"]]), result("c1", "x")])).toEqual(
        breaks(CONVERSE_RULES.toolUseId, "message 1 has a tool call without an id"),
      );
    });

    it("throws tool-use-id for a tool call whose id is empty", () => {
      expect(broken([user("q"), calls([["", "a"]]), result("c1", "x")])).toEqual(breaks(CONVERSE_RULES.toolUseId, "message 1 has a tool call without an id"));
    });

    it("throws tool-use-id for a tool result whose tool call id is empty", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), result("", "x")])).toEqual(
        breaks(CONVERSE_RULES.toolUseId, "message 2 is a tool result without a tool call id"),
      );
    });

    it("throws tool-use-id for a tool result with no tool call id at all", () => {
      const noId = new ToolMessage({ content: "x", tool_call_id: undefined as unknown as string });
      expect(broken([user("q"), calls([["c1", "a"]]), noId])).toEqual(breaks(CONVERSE_RULES.toolUseId, "message 2 is a tool result without a tool call id"));
    });

    it("returns for an assistant message with both text and a tool call", () => {
      expect(broken([user("q"), calls([["c1", "a"]], "Let me check."), result("c1", "x")])).toBeUndefined();
    });

    it("returns for four cache points and throws cache-point-limit for five, wherever they are", () => {
      const point = { type: "cache_point", cachePoint: { type: "default" } };
      const marked = (text: string) => [{ type: "text" as const, text }, point];
      const four = [
        new SystemMessage({ content: marked("Be brief.") }),
        new HumanMessage({ content: marked("q1") }),
        new AIMessage({ content: marked("a1") }),
        new HumanMessage({ content: marked("q2") }),
      ];
      expect(broken(four)).toBeUndefined();
      const five = [...four.slice(0, 3), new HumanMessage({ content: [...marked("q2"), point] })];
      expect(broken(five)).toEqual(breaks(CONVERSE_RULES.cachePointLimit, "the view has 5 cache points, over Bedrock's 4"));
    });

    it("throws no-empty-content for a user message that is only a cache point", () => {
      const point = { type: "cache_point", cachePoint: { type: "default" } };
      expect(broken([new HumanMessage({ content: [point] })])).toEqual(breaks(CONVERSE_RULES.noEmptyContent, "message 0 has no content blocks"));
    });

    it("throws tool-ids-unique for a repeated tool call id", () => {
      expect(
        broken([
          user("q"),
          calls([
            ["c1", "a"],
            ["c1", "b"],
          ]),
          result("c1", "x"),
        ]),
      ).toEqual(breaks(CONVERSE_RULES.toolIdsUnique, "message 1 repeats"));
    });

    it("throws tool-ids-unique for two results with one id", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), result("c1", "x"), result("c1", "y")])).toEqual(
        breaks(CONVERSE_RULES.toolIdsUnique, "message 2 repeats"),
      );
    });

    it("throws tool-use-answered when a parallel call has no result", () => {
      expect(
        broken([
          user("q"),
          calls([
            ["c1", "a"],
            ["c2", "b"],
          ]),
          result("c1", "x"),
        ]),
      ).toEqual(breaks(CONVERSE_RULES.toolUseAnswered, "tool call c2 of message 1 is not answered"));
    });

    it("throws tool-use-answered when a call is followed by a user message instead of its result", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), user("q2")])).toEqual(
        breaks(CONVERSE_RULES.toolUseAnswered, "tool call c1 of message 1 is not answered"),
      );
    });

    it("throws tool-result-has-use for a result whose call the previous message did not make", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), result("c1", "x"), result("c9", "y")])).toEqual(
        breaks(CONVERSE_RULES.toolResultHasUse, "message 2 answers tool call c9"),
      );
    });

    it("throws tool-result-has-use for a result that opens the conversation", () => {
      expect(broken([result("c1", "x")])).toEqual(breaks(CONVERSE_RULES.toolResultHasUse, "message 0 answers tool call c1"));
    });

    it("throws tool-result-has-use for a result whose call was made two assistant messages before", () => {
      const view = [user("q"), calls([["c1", "a"]]), result("c1", "x"), calls([["c2", "b"]]), result("c2", "y"), result("c1", "again")];
      expect(broken(view)).toEqual(breaks(CONVERSE_RULES.toolResultHasUse, "message 4 answers tool call c1"));
    });

    it("throws tool-config-present for tool calls in a request without tools", () => {
      expect(broken([user("q"), calls([["c1", "a"]]), result("c1", "x")], { toolsConfigured: false })).toEqual(
        breaks(CONVERSE_RULES.toolConfigPresent, "message 1 has tool blocks"),
      );
    });

    it("throws tool-config-present for a tool result in a request without tools", () => {
      expect(broken([result("c1", "x")], { toolsConfigured: false })).toEqual(breaks(CONVERSE_RULES.toolConfigPresent, "message 0 has tool blocks"));
    });

    it("throws known-message-type for a message type Converse does not take", () => {
      expect(broken([user("q"), new ChatMessage("note", "critic"), new HumanMessage("q2")])).toEqual(
        breaks(CONVERSE_RULES.knownMessageType, "message 1 has type generic"),
      );
    });
  });
});
