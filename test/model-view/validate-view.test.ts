import { AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { InvalidModelViewError } from "../../lib/errors.js";
import { CONVERSE_RULES, validateConverseView, type ConverseRule } from "../../lib/model-view/index.js";
import { answer, calls, result, user } from "./histories.js";

function brokenRule(messages: BaseMessage[], options?: Parameters<typeof validateConverseView>[1]): ConverseRule | undefined {
  try {
    validateConverseView(messages, options);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidModelViewError);
    return (error as InvalidModelViewError).rule as ConverseRule;
  }
}

describe("model view", () => {
  describe("validateConverseView", () => {
    it("returns for a view with parallel tool calls answered by consecutive tool messages", () => {
      const view = [new SystemMessage("s"), user("q1"), answer("a1"), user("q2"), calls([["c1", "a"], ["c2", "b"]]), result("c2", "y"), result("c1", "x")];
      expect(brokenRule(view)).toBeUndefined();
    });

    it("returns for an assistant message that is only tool calls (empty text is not sent)", () => {
      expect(brokenRule([user("q"), calls([["c1", "a"]], ""), result("c1", "x")])).toBeUndefined();
    });

    it("throws not-empty when there is no user or assistant message", () => {
      expect(brokenRule([new SystemMessage("s")])).toBe(CONVERSE_RULES.notEmpty);
    });

    it("throws system-first when a system message follows the conversation", () => {
      expect(brokenRule([user("q"), new SystemMessage("s")])).toBe(CONVERSE_RULES.systemFirst);
    });

    it("throws first-message-user when the assistant speaks first", () => {
      expect(brokenRule([answer("hi"), user("q")])).toBe(CONVERSE_RULES.firstMessageUser);
    });

    it("throws last-message-user when the view ends with the assistant", () => {
      expect(brokenRule([user("q"), answer("a")])).toBe(CONVERSE_RULES.lastMessageUser);
    });

    it("throws roles-alternate for consecutive user messages", () => {
      expect(brokenRule([user("q1"), user("q2")])).toBe(CONVERSE_RULES.rolesAlternate);
    });

    it("throws roles-alternate for a tool result followed by a user message (the client does not merge them)", () => {
      expect(brokenRule([user("q1"), calls([["c1", "a"]]), result("c1", "x"), user("q2")])).toBe(CONVERSE_RULES.rolesAlternate);
    });

    it("throws roles-alternate for consecutive assistant messages", () => {
      expect(brokenRule([user("q1"), answer("a"), calls([["c1", "a"]]), result("c1", "x")])).toBe(CONVERSE_RULES.rolesAlternate);
    });

    it("throws no-empty-content for an empty user message", () => {
      expect(brokenRule([user("")])).toBe(CONVERSE_RULES.noEmptyContent);
    });

    it("throws no-empty-content for an assistant message with neither text nor tool calls", () => {
      expect(brokenRule([user("q1"), answer(""), user("q2")])).toBe(CONVERSE_RULES.noEmptyContent);
    });

    it("throws no-empty-content for a tool result with no content blocks", () => {
      const empty = new ToolMessage({ content: [], tool_call_id: "c1" });
      expect(brokenRule([user("q"), calls([["c1", "a"]]), empty])).toBe(CONVERSE_RULES.noEmptyContent);
    });

    it("throws no-blank-text for blank text in a user message", () => {
      expect(brokenRule([user(" \n ")])).toBe(CONVERSE_RULES.noBlankText);
    });

    it("throws no-blank-text for a blank text block in an assistant message", () => {
      const blank = new AIMessage({ content: [{ type: "text", text: "ok" }, { type: "text", text: "  " }] });
      expect(brokenRule([user("q1"), blank, user("q2")])).toBe(CONVERSE_RULES.noBlankText);
    });

    it("throws no-blank-text for a blank tool result", () => {
      expect(brokenRule([user("q"), calls([["c1", "a"]]), result("c1", "  ")])).toBe(CONVERSE_RULES.noBlankText);
    });

    it("throws no-blank-text for a blank system prompt", () => {
      expect(brokenRule([new SystemMessage(" "), user("q")])).toBe(CONVERSE_RULES.noBlankText);
    });

    it("throws tool-use-id for a tool call without an id", () => {
      expect(brokenRule([user("q"), calls([[undefined, "a"]]), result("c1", "x")])).toBe(CONVERSE_RULES.toolUseId);
    });

    it("throws tool-ids-unique for a repeated tool call id", () => {
      expect(brokenRule([user("q"), calls([["c1", "a"], ["c1", "b"]]), result("c1", "x")])).toBe(CONVERSE_RULES.toolIdsUnique);
    });

    it("throws tool-ids-unique for two results with one id", () => {
      expect(brokenRule([user("q"), calls([["c1", "a"]]), result("c1", "x"), result("c1", "y")])).toBe(CONVERSE_RULES.toolIdsUnique);
    });

    it("throws tool-use-answered when a parallel call has no result", () => {
      expect(brokenRule([user("q"), calls([["c1", "a"], ["c2", "b"]]), result("c1", "x")])).toBe(CONVERSE_RULES.toolUseAnswered);
    });

    it("throws tool-result-has-use for a result whose call the previous message did not make", () => {
      expect(brokenRule([user("q"), calls([["c1", "a"]]), result("c1", "x"), result("c9", "y")])).toBe(CONVERSE_RULES.toolResultHasUse);
    });

    it("throws tool-result-has-use for a result right after a user message", () => {
      expect(brokenRule([result("c1", "x")])).toBe(CONVERSE_RULES.toolResultHasUse);
    });

    it("throws tool-config-present for tool blocks in a request without tools", () => {
      expect(brokenRule([user("q"), calls([["c1", "a"]]), result("c1", "x")], { toolsConfigured: false })).toBe(CONVERSE_RULES.toolConfigPresent);
    });

    it("throws known-message-type for a message type Converse does not take", () => {
      expect(brokenRule([user("q"), new ChatMessage("note", "critic"), new HumanMessage("q2")])).toBe(CONVERSE_RULES.knownMessageType);
    });
  });
});
