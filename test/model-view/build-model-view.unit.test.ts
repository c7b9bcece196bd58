import { AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { ContextBudgetExceededError, InvalidModelViewError } from "../../lib/errors.js";
import {
  buildModelView,
  countMessagesTokens,
  EMPTY_TOOL_OUTPUT,
  EMPTY_USER_MESSAGE,
  INTERRUPTED_TOOL_RESULT,
  NO_ANSWER_STUB,
  outOfSightNotice,
  validateConverseView,
  type ModelView,
  type PromptCachePolicy,
} from "../../lib/model-view/index.js";
import { answer, calls, fingerprint, offloaded, policy, result, rows, toolCallIds, user } from "./histories.js";

/** Type and text of each view message, tool calls as `call:<ids>` and results as `result:<id>`. */
function shape(messages: readonly { type: string; content: unknown }[]): string[] {
  return messages.map((m) => {
    if (m.type === "tool") return `result:${(m as ToolMessage).tool_call_id}`;
    const ids = toolCallIds(m as AIMessage);
    const text = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
    return ids.length ? `${m.type}:${text}|call:${ids.join(",")}` : `${m.type}:${text}`;
  });
}

function finishedTurn(n: number) {
  return [user(`q${n}`), calls([[`t${n}`, "sql_query"]]), result(`t${n}`, `rows of turn ${n}`), answer(`a${n}`)];
}

describe("model view", () => {
  describe("buildModelView", () => {
    it("returns the system prompt, finished turns as question/answer pairs, then the active turn whole", () => {
      const state = [...finishedTurn(1), user("q2"), calls([["c1", "sql_query"]], "Looking."), result("c1", "north,1200")];
      const view = buildModelView(state, policy({ systemPrompt: "Be brief." }));
      expect(view.messages[0]).toBeInstanceOf(SystemMessage);
      expect(view.messages[0].content).toBe("Be brief.");
      expect(shape(view.messages.slice(1))).toEqual(["human:q1", "ai:a1", "human:q2", "ai:Looking.|call:c1", "result:c1"]);
    });

    it("returns only the last N finished turns", () => {
      const state = [...finishedTurn(1), ...finishedTurn(2), ...finishedTurn(3), user("q4")];
      const view = buildModelView(state, policy({ finishedTurns: 2 }));
      expect(shape(view.messages.slice(1))).toEqual(["human:q2", "ai:a2", "human:q3", "ai:a3", "human:q4"]);
      expect(view.stats.finishedTurnsInState).toBe(3);
      expect(view.stats.finishedTurnsKept).toBe(2);
    });

    it("returns the history from the same first turn until a block of turns has passed", () => {
      const firstQuestion = (finished: number) => {
        const state = [...Array.from({ length: finished }, (_, t) => finishedTurn(t + 1)).flat(), user("next")];
        const view = buildModelView(state, policy({ finishedTurns: 2, historyBlockTurns: 3 }));
        return { first: view.messages[1].content, kept: view.stats.finishedTurnsKept };
      };
      expect([2, 3, 4].map(firstQuestion)).toEqual([
        { first: "q1", kept: 2 },
        { first: "q1", kept: 3 },
        { first: "q1", kept: 4 },
      ]);
      expect([5, 6, 7, 8].map(firstQuestion)).toEqual([
        { first: "q4", kept: 2 },
        { first: "q4", kept: 3 },
        { first: "q4", kept: 4 },
        { first: "q7", kept: 2 },
      ]);
    });

    it("returns no finished turns when the policy keeps none", () => {
      const state = [...finishedTurn(1), user("q2")];
      expect(shape(buildModelView(state, policy({ finishedTurns: 0 })).messages.slice(1))).toEqual(["human:q2"]);
    });

    it("returns a finished turn without a final answer as its question and a marked stub", () => {
      const state = [user("q1"), calls([["c1", "sql_query"]]), user("q2")];
      const view = buildModelView(state, policy());
      expect(shape(view.messages.slice(1))).toEqual(["human:q1", `ai:${NO_ANSWER_STUB}`, "human:q2"]);
      expect(view.stats.repairs.stubbedAnswers).toBe(1);
    });

    it("returns consecutive user messages as alternating turns with a stub between them", () => {
      const state = [user("q1"), user("q2"), user("q3")];
      const view = buildModelView(state, policy());
      expect(shape(view.messages.slice(1))).toEqual(["human:q1", `ai:${NO_ANSWER_STUB}`, "human:q2", `ai:${NO_ANSWER_STUB}`, "human:q3"]);
    });

    it("returns the text of a final answer whose content is a list of blocks", () => {
      const blocks = new AIMessage({
        content: [
          { type: "text", text: "Revenue rose." },
          { type: "text", text: "  " },
        ],
      });
      const view = buildModelView([user("q1"), blocks, user("q2")], policy());
      expect(view.messages[2].content).toBe("Revenue rose.");
    });

    it("replaces a tool result over the threshold with a notice naming the tool and its size", () => {
      const big = result("c1", rows(300), "sql_query");
      const view = buildModelView([user("q"), calls([["c1", "sql_query"]]), big], policy({ toolOutputTokens: 100 }));
      const notice = view.messages[view.messages.length - 1] as ToolMessage;
      expect(notice.tool_call_id).toBe("c1");
      expect(notice.content).toContain('"sql_query"');
      expect(notice.content).toContain("300 tokens");
      expect(view.stats.omittedOutputs).toEqual([{ toolCallId: "c1", toolName: "sql_query", tokens: 300, reason: "over-threshold" }]);
      expect(big.content).toBe(rows(300));
    });

    it("keeps a tool result of exactly the threshold", () => {
      const view = buildModelView([user("q"), calls([["c1", "sql_query"]]), result("c1", rows(100))], policy({ toolOutputTokens: 100 }));
      expect(view.messages[view.messages.length - 1].content).toBe(rows(100));
      expect(view.stats.omittedOutputs).toEqual([]);
    });

    it("replaces an offloaded tool result with a notice naming its handle", () => {
      const view = buildModelView([user("q"), calls([["c1", "sql_query"]]), offloaded("c1", "art_abc", 25_000)], policy());
      const notice = view.messages[view.messages.length - 1];
      expect(notice.content).toContain("art_abc");
      expect(notice.content).toContain("read_tool_output");
      expect(notice.content).toContain("25000 tokens");
      expect(view.stats.omittedOutputs).toEqual([{ toolCallId: "c1", toolName: "sql_query", tokens: 25_000, handle: "art_abc", reason: "over-threshold" }]);
    });

    it("answers an unanswered tool call of the active turn with a synthetic error result", () => {
      const view = buildModelView(
        [
          user("q"),
          calls([
            ["c1", "sql_query"],
            ["c2", "search_documents"],
          ]),
          result("c1", "ok"),
        ],
        policy(),
      );
      expect(shape(view.messages.slice(1))).toEqual(["human:q", "ai:|call:c1,c2", "result:c1", "result:c2"]);
      const synthetic = view.messages[view.messages.length - 1] as ToolMessage;
      expect(synthetic.content).toBe(INTERRUPTED_TOOL_RESULT);
      expect(synthetic.status).toBe("error");
      expect(view.stats.repairs.syntheticToolResults).toBe(1);
    });

    it("answers a call left unanswered before a later model call, in place", () => {
      const state = [user("q"), calls([["c1", "sql_query"]]), calls([["c2", "sql_query"]]), result("c2", "ok")];
      const view = buildModelView(state, policy());
      expect(shape(view.messages.slice(1))).toEqual(["human:q", "ai:|call:c1", "result:c1", "ai:|call:c2", "result:c2"]);
    });

    it("leaves out tool results whose call is not the one before them, and repeated results", () => {
      const state = [user("q"), result("x0", "orphan"), calls([["c1", "sql_query"]]), result("c1", "ok"), result("c1", "again"), result("zz", "stray")];
      const view = buildModelView(state, policy());
      expect(shape(view.messages.slice(1))).toEqual(["human:q", "ai:|call:c1", "result:c1"]);
      expect(view.messages[3].content).toBe("ok");
      expect(view.stats.repairs.orphanToolResults).toBe(3);
    });

    it("leaves out tool calls without an id or with an id already used in the turn", () => {
      const state = [
        user("q"),
        calls(
          [
            [undefined, "sql_query"],
            ["c1", "sql_query"],
          ],
          "Checking.",
        ),
        result("c1", "ok"),
        calls([["c1", "sql_query"]]),
      ];
      const view = buildModelView(state, policy());
      expect(shape(view.messages.slice(1))).toEqual(["human:q", "ai:Checking.|call:c1", "result:c1"]);
      expect(view.stats.repairs.droppedToolCalls).toBe(2);
    });

    it("merges consecutive assistant messages of the active turn", () => {
      const state = [user("q"), answer("Let me look."), calls([["c1", "sql_query"]], "Querying."), result("c1", "ok")];
      const view = buildModelView(state, policy());
      expect(shape(view.messages.slice(1))).toEqual(["human:q", "ai:Let me look.\n\nQuerying.|call:c1", "result:c1"]);
      expect(view.stats.repairs.mergedMessages).toBe(1);
    });

    it("leaves out an assistant message with blank text and no tool calls", () => {
      const state = [user("q"), calls([["c1", "sql_query"]]), result("c1", "ok"), answer("  \n"), calls([["c2", "sql_query"]]), result("c2", "ok")];
      const view = buildModelView(state, policy());
      expect(shape(view.messages.slice(1))).toEqual(["human:q", "ai:|call:c1", "result:c1", "ai:|call:c2", "result:c2"]);
      expect(view.stats.repairs.droppedMessages).toBe(1);
    });

    it("returns placeholders for an empty tool output and a blank user message", () => {
      const view = buildModelView([user(" "), calls([["c1", "sql_query"]]), result("c1", "")], policy());
      expect(view.messages[1].content).toBe(EMPTY_USER_MESSAGE);
      expect(view.messages[3].content).toBe(EMPTY_TOOL_OUTPUT);
    });

    it("leaves out messages before the first user message and system messages in state", () => {
      const state = [answer("Hello!"), result("c0", "stray"), new SystemMessage("old prompt"), user("q")];
      const view = buildModelView(state, policy());
      expect(shape(view.messages)).toEqual([`system:${policy().systemPrompt}`, "human:q"]);
      expect(view.stats.repairs.droppedMessages).toBe(2);
    });

    it("returns no system message when the prompt is blank", () => {
      expect(shape(buildModelView([user("q")], policy({ systemPrompt: " " })).messages)).toEqual(["human:q"]);
    });

    it("drops the oldest finished pairs first when the view is over budget", () => {
      const long = (n: number) => [user(`q${n} ${rows(200)}`), answer(`a${n}`)];
      const state = [...long(1), ...long(2), ...long(3), user("q4")];
      const full = buildModelView(state, policy());
      const view = buildModelView(state, policy({ totalBudget: full.stats.viewTokens - 100 }));
      expect(view.stats.finishedTurnsKept).toBe(2);
      expect(view.stats.finishedTurnsDroppedForBudget).toBe(1);
      expect(view.messages[1].content).toBe(`q2 ${rows(200)}`);
    });

    it("replaces the largest active-turn results with notices when dropping pairs is not enough", () => {
      const state = [
        ...finishedTurn(1),
        user("q2"),
        calls([
          ["c1", "sql_query"],
          ["c2", "search_documents"],
          ["c3", "sql_query"],
        ]),
        result("c1", rows(900)),
        result("c2", rows(1500), "search_documents"),
        result("c3", rows(50)),
      ];
      const full = buildModelView(state, policy());
      const view = buildModelView(state, policy({ totalBudget: full.stats.viewTokens - 1_000 }));
      expect(view.stats.finishedTurnsKept).toBe(0);
      expect(view.stats.omittedOutputs).toEqual([{ toolCallId: "c2", toolName: "search_documents", tokens: 1_500, reason: "over-budget" }]);
      expect(view.messages.map((m) => m.content)).toContain(rows(900));
      expect(view.messages.map((m) => m.content)).toContain(rows(50));
    });

    it("counts the tool schemas against the budget", () => {
      const state = [...finishedTurn(1), user("q2")];
      const { viewTokens } = buildModelView(state, policy()).stats;
      const view = buildModelView(state, policy({ totalBudget: viewTokens + 10, toolSchemaTokens: 20 }));
      expect(view.stats.finishedTurnsKept).toBe(0);
      expect(view.stats.viewTokens + view.stats.toolSchemaTokens).toBeLessThanOrEqual(viewTokens + 10);
    });

    it("keeps the budget in the model's tokens: local tokens times the estimated ratio, plus its offset, and its margin", () => {
      const state = [...finishedTurn(1), ...finishedTurn(2), user("q3")];
      const local = buildModelView(state, policy()).stats;
      const localTotal = local.viewTokens + local.toolSchemaTokens;
      const exact = buildModelView(state, policy({ totalBudget: localTotal }));
      expect(exact.stats.finishedTurnsKept).toBe(2);
      // The same budget counts 1.2 × 1.25 = 1.5 model tokens a local token, plus 10: a pair must go.
      const tokenEstimate = { ratio: 1.2, offset: 8, margin: 0.25 };
      const scaled = buildModelView(state, policy({ totalBudget: localTotal, tokenEstimate }));
      const scaledLocal = scaled.stats.viewTokens + scaled.stats.toolSchemaTokens;
      expect(scaled.stats.finishedTurnsKept).toBeLessThan(2);
      expect(Math.ceil((scaledLocal * 1.2 + 8) * 1.25)).toBeLessThanOrEqual(localTotal);
      expect(scaled.stats.estimatedInputTokens).toBe(Math.ceil(scaledLocal * 1.2 + 8));
      expect(scaled.stats.tokenEstimate).toEqual(tokenEstimate);
    });

    it("throws ContextBudgetExceededError with the model's tokens when the estimate puts the smallest view over the budget", () => {
      const state = [user(`q ${rows(300)}`)];
      const act = () => buildModelView(state, policy({ totalBudget: 400, tokenEstimate: { ratio: 1.5, offset: 0, margin: 0.1 } }));
      expect(act).toThrow(expect.objectContaining({ name: "ContextBudgetExceededError", budget: 400, tokens: expect.any(Number) }));
      const { viewTokens } = buildModelView(state, policy()).stats;
      expect(() => act()).toThrow(String(Math.ceil(viewTokens * 1.65)));
    });

    it("throws ContextBudgetExceededError when even the reduced view is over budget", () => {
      const state = [user(`q ${rows(500)}`), calls([["c1", "sql_query"]]), result("c1", rows(5_000))];
      const act = () => buildModelView(state, policy({ totalBudget: 400 }));
      expect(act).toThrow(ContextBudgetExceededError);
      try {
        act();
      } catch (error) {
        expect((error as ContextBudgetExceededError).budget).toBe(400);
        expect((error as ContextBudgetExceededError).tokens).toBeGreaterThan(400);
      }
    });

    it("throws InvalidModelViewError when the thread has no user message", () => {
      expect(() => buildModelView([answer("Hello!")], policy())).toThrow(InvalidModelViewError);
    });

    it("throws InvalidModelViewError when the thread ends with a final answer", () => {
      const act = () => buildModelView([user("q"), answer("a")], policy());
      expect(act).toThrow(expect.objectContaining({ name: "InvalidModelViewError", rule: "last-message-user" }));
    });

    it("does not change the messages it is given", () => {
      const state = [
        ...finishedTurn(1),
        user(" "),
        answer("x"),
        calls(
          [
            [undefined, "a"],
            ["c1", "sql_query"],
          ],
          "  ",
        ),
        result("c1", rows(3_000)),
        offloaded("c9", "art_1", 9),
      ];
      const before = fingerprint(state);
      const copy = [...state];
      buildModelView(state, policy({ toolOutputTokens: 100, totalBudget: 600 }));
      expect(fingerprint(state)).toBe(before);
      expect(state).toEqual(copy);
    });

    it("returns token counts of the state and of the view", () => {
      const state = [...finishedTurn(1), user("q2"), calls([["c1", "sql_query"]]), result("c1", rows(3_000))];
      const view = buildModelView(state, policy({ toolSchemaTokens: 123 }));
      expect(view.stats.stateMessages).toBe(state.length);
      expect(view.stats.stateTokens).toBe(countMessagesTokens(state));
      expect(view.stats.viewMessages).toBe(view.messages.length);
      expect(view.stats.viewTokens).toBe(countMessagesTokens(view.messages));
      expect(view.stats.toolSchemaTokens).toBe(123);
      expect(view.stats.budget).toBe(24_000);
    });

    it("returns a view that passes the Converse validator", () => {
      const state = [
        user("q1"),
        user("q2"),
        calls([
          ["c1", "a"],
          ["c2", "b"],
        ]),
        result("c2", "x"),
        answer("partial"),
        user("q3"),
        calls([["c3", "a"]]),
      ];
      expect(() => validateConverseView(buildModelView(state, policy()).messages)).not.toThrow();
    });
  });
  describe("buildModelView (hard cases)", () => {
    /** Every boundary reaches the minimum: the points show the layout alone. */
    const everyBoundary: PromptCachePolicy = { minTokensPerCheckpoint: 1, stableTtl: "1h", turnTtl: "5m" };
    const points = (view: ModelView) => view.stats.cachePoints.map((p) => `${p.kind}@${p.after}`);

    it("returns the system, history-block, previous-call and end points where the view's parts end", () => {
      const state = [
        ...[0, 1, 2, 3].flatMap((n) => [user(`q${n}`), answer(`a${n}`)]),
        user("q4"),
        calls([["c1", "sql_query"]]),
        result("c1", "north,1"),
        calls([["c2", "sql_query"]]),
        result("c2", "south,2"),
      ];
      // Kept: turns 2 and 3 (the block), then q4, the first call's results (the previous call's end) and the second's.
      const view = buildModelView(state, policy({ finishedTurns: 2, cache: everyBoundary }));
      expect(shape(view.messages).slice(1, 6)).toEqual(["human:q2", "ai:a2", "human:q3", "ai:a3", "human:q4"]);
      expect(points(view)).toEqual(["system@0", "history@4", "previous@7", "end@9"]);
    });

    it("returns the previous point at the question of the latest finished turn after the block, on a turn's first call", () => {
      const state = [...[0, 1, 2, 3].flatMap((n) => [user(`q${n}`), answer(`a${n}`)]), user("q4")];
      // Blocks of three turns, two kept at least: turns 0 and 1 are the block, 2 and 3 follow it one a turn.
      const view = buildModelView(state, policy({ finishedTurns: 2, historyBlockTurns: 3, cache: everyBoundary }));
      expect(shape(view.messages).slice(1, 4)).toEqual(["human:q0", "ai:a0", "human:q1"]);
      expect(points(view)).toEqual(["system@0", "history@4", "previous@7", "end@9"]);
    });

    it("returns no previous point on a turn's first call when no finished turn follows the block", () => {
      const state = [user("q0"), answer("a0"), user("q1"), answer("a1"), user("q2")];
      expect(points(buildModelView(state, policy({ finishedTurns: 2, cache: everyBoundary })))).toEqual(["system@0", "history@4", "end@5"]);
    });

    it("returns no history point before the block is whole, the previous point at the latest finished question", () => {
      const state = [user("q0"), answer("a0"), user("q1"), answer("a1"), user("q2")];
      expect(points(buildModelView(state, policy({ finishedTurns: 6, cache: everyBoundary })))).toEqual(["system@0", "previous@3", "end@5"]);
      // No finished turns wanted, but a block of three keeps the two that have not made a block yet.
      const none = buildModelView(state, policy({ finishedTurns: 0, historyBlockTurns: 3, cache: everyBoundary }));
      expect(points(none)).toEqual(["system@0", "previous@3", "end@5"]);
    });

    it("returns no previous point after an interrupted call's stand-in result: no model call ended there", () => {
      const state = [user("q"), calls([["c1", "sql_query"]]), calls([["c2", "sql_query"]]), result("c2", "north,1")];
      const view = buildModelView(state, policy({ cache: everyBoundary }));
      expect(view.messages[3].content).toBe(INTERRUPTED_TOOL_RESULT);
      expect(points(view)).toEqual(["system@0", "previous@1", "end@5"]);
      // The stand-in has no stored message: the dispositions cover the four stored ones only.
      expect(view.dispositions).toEqual([
        { fate: "sent", viewIndex: 1, turn: 0 },
        { fate: "sent", viewIndex: 2, turn: 0 },
        { fate: "sent", viewIndex: 4, turn: 0 },
        { fate: "sent", viewIndex: 5, turn: 0 },
      ]);
    });

    it("merges a text answer with a later block message, and a block message with a later text one, keeping each text once", () => {
      const blocks = (text: string) =>
        new AIMessage({
          content: [
            { type: "text", text },
            { type: "text", text: " " },
          ],
        });
      const blocksThenText = buildModelView([user("q"), blocks("Checking."), calls([["c1", "sql_query"]], "Let me look."), result("c1", "x")], policy());
      expect(blocksThenText.messages[2].content).toEqual([
        { type: "text", text: "Checking." },
        { type: "text", text: "Let me look." },
      ]);
      const withCalls = new AIMessage({ content: [{ type: "text", text: "Looking." }], tool_calls: calls([["c1", "sql_query"]]).tool_calls });
      const textThenBlocks = buildModelView([user("q"), answer("Thinking."), withCalls, result("c1", "x")], policy());
      expect(textThenBlocks.messages[2].content).toEqual([
        { type: "text", text: "Thinking." },
        { type: "text", text: "Looking." },
      ]);
    });

    it("merges a text answer with a later call that has no text into that text alone", () => {
      const view = buildModelView([user("q"), answer("Thinking."), calls([["c1", "sql_query"]], " "), result("c1", "x")], policy());
      expect(view.messages[2].content).toBe("Thinking.");
      expect(toolCallIds(view.messages[2])).toEqual(["c1"]);
    });

    it("returns an assistant message whose text blocks are all blank as empty text with its calls, repaired as blank text", () => {
      const blank = new AIMessage({ content: [{ type: "text", text: " " }], tool_calls: calls([["c1", "sql_query"]]).tool_calls });
      const view = buildModelView([user("q"), blank, result("c1", "x")], policy());
      expect(view.messages[2].content).toBe("");
      expect(view.dispositions[1]).toEqual({ fate: "repaired", viewIndex: 2, repair: "blank-text", turn: 0 });
    });

    it("keeps a question's non-text blocks and drops its blank text blocks", () => {
      const image = { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } };
      const question = new HumanMessage({ content: [image, { type: "text", text: " " }, { type: "text", text: "What is this?" }] });
      const view = buildModelView([question], policy());
      expect(view.messages[1].content).toEqual([image, { type: "text", text: "What is this?" }]);
      // Without blank blocks, the stored question itself is sent.
      const clean = new HumanMessage({ content: [image, { type: "text", text: "What is this?" }] });
      expect(buildModelView([clean], policy()).messages[1]).toBe(clean);
    });

    it("leaves out system and unsupported messages inside the active turn, counting only the unsupported ones as dropped", () => {
      const state = [
        user("q"),
        new SystemMessage("a later prompt"),
        new ChatMessage({ content: "generic", role: "critic" }),
        calls([["c1", "x"]]),
        result("c1", "y"),
      ];
      const view = buildModelView(state, policy());
      expect(shape(view.messages).slice(1)).toEqual(["human:q", "ai:|call:c1", "result:c1"]);
      expect(view.dispositions.slice(1, 3)).toEqual([
        { fate: "left-out", reason: "system", turn: 0 },
        { fate: "left-out", reason: "unsupported-type", turn: 0 },
      ]);
      expect(view.stats.repairs.droppedMessages).toBe(1);
    });

    it("counts text left last by unusable tool calls as a dropped message", () => {
      const view = buildModelView([user("q"), calls([["", "sql_query"]], "Let me check.")], policy());
      expect(shape(view.messages).slice(1)).toEqual(["human:q"]);
      expect(view.stats.repairs).toMatchObject({ droppedMessages: 1, droppedToolCalls: 1 });
      expect(view.dispositions[1]).toEqual({ fate: "left-out", reason: "trailing-text", turn: 0 });
    });

    it("returns a notice named after the call for a result stored without a name, and no handle key for an output not offloaded", () => {
      const unnamed = new ToolMessage({ content: rows(300), tool_call_id: "c1" });
      const view = buildModelView([user("q"), calls([["c1", "sql_query"]]), unnamed], policy({ toolOutputTokens: 100 }));
      expect((view.messages[3] as ToolMessage).name).toBe("sql_query");
      expect(view.stats.omittedOutputs).toStrictEqual([{ toolCallId: "c1", toolName: "sql_query", tokens: expect.any(Number), reason: "over-threshold" }]);
      expect(view.dispositions[2]).toStrictEqual({ fate: "notice", notice: "tool-output", viewIndex: 3, reason: "over-threshold", turn: 0 });
      expect(view.dispositions[0]).toStrictEqual({ fate: "sent", viewIndex: 1, turn: 0 });
    });

    it("returns the dispositions of messages before the first question without a turn", () => {
      const view = buildModelView([answer("Hello!"), user("q")], policy());
      expect(view.dispositions[0]).toStrictEqual({ fate: "left-out", reason: "before-first-question" });
    });

    it("returns the system prompt and the out-of-sight notice as one system message, a blank line between them", () => {
      const state = [user("q0"), answer("a0"), user("q1"), answer("a1"), user("q2")];
      const outOfSight = { toolName: "search_conversation", stepTurns: 1 };
      const view = buildModelView(state, policy({ finishedTurns: 1, outOfSight }));
      expect(view.messages[0].content).toBe(`${policy().systemPrompt}\n\n${outOfSightNotice(1, outOfSight)}`);
      expect(view.dispositions[0]).toEqual({ fate: "notice", notice: "out-of-sight", viewIndex: 0, turn: 0 });
    });

    it("throws ContextBudgetExceededError with the tokens of the view it could not shrink, leaving results shorter than their notice", () => {
      const state = [user(`q ${rows(300)}`), calls([["c1", "sql_query"]]), result("c1", "north,1")];
      const smallest = countMessagesTokens([new SystemMessage(policy().systemPrompt), ...state]);
      expect(() => buildModelView(state, policy({ totalBudget: smallest - 1 }))).toThrow(
        expect.objectContaining({ name: "ContextBudgetExceededError", tokens: smallest, budget: smallest - 1 }),
      );
      expect(() => buildModelView(state, policy({ totalBudget: smallest - 1 }))).toThrow(
        `the model view needs ${smallest} tokens, over the budget of ${smallest - 1}, ` +
          "with no finished turns and every tool result in the active turn shown as a notice",
      );
      expect(buildModelView(state, policy({ totalBudget: smallest })).messages[3].content).toBe("north,1");
    });

    it("throws InvalidModelViewError, rather than return a view Bedrock refuses, for a question that holds only a cache point", () => {
      const question = new HumanMessage({ content: [{ type: "cache_point", cachePoint: { type: "default" } }] as never });
      expect(() => buildModelView([question], policy())).toThrow(expect.objectContaining({ name: "InvalidModelViewError", rule: "no-empty-content" }));
    });

    it("throws InvalidModelViewError with what is wrong: no user message, or nothing to answer", () => {
      expect(() => buildModelView([answer("Hello!")], policy())).toThrow("the thread has no user message to answer");
      expect(() => buildModelView([user("q"), answer("a")], policy())).toThrow("the latest turn already has its final answer: there is nothing to answer");
    });

    it("returns the time it took to build, within the time the call took", () => {
      const before = performance.now();
      const view = buildModelView([...finishedTurn(1), user("q")], policy());
      const took = performance.now() - before;
      expect(view.stats.buildMs).toBeGreaterThanOrEqual(0);
      expect(view.stats.buildMs).toBeLessThanOrEqual(took);
    });
  });
});
