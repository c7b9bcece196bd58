import { AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { InvalidModelViewError } from "../../lib/errors.js";
import { describe, expect, it } from "vitest";
import {
  buildModelView,
  countMessageTokens,
  isCachePointBlock,
  MAX_CACHE_POINTS,
  placeCachePoints,
  validateConverseView,
  withCachePoints,
  type PromptCachePolicy,
} from "../../lib/model-view/index.js";
import { answer, calls, policy, result, rows, user } from "./histories.js";

const CACHE: PromptCachePolicy = { minTokensPerCheckpoint: 100, stableTtl: "1h", turnTtl: "5m" };

/** A finished turn of about `tokens` tokens: question, one tool exchange (not in the view), answer. */
function turn(n: number, tokens = 60) {
  return [user(`q${n} ${rows(tokens / 2)}`), calls([[`t${n}`, "sql_query"]]), result(`t${n}`, "north,1"), answer(`a${n} ${rows(tokens / 2)}`)];
}

function kinds(points: { kind: string; after: number }[]): string[] {
  return points.map((p) => `${p.kind}@${p.after}`);
}

describe("model view", () => {
  describe("placeCachePoints", () => {
    const layout = { prefixTokens: [150, 400, 450, 500, 700, 750], system: 0, historyBlockEnd: 1, earlierEnds: [2, 3, 4] };

    it("returns the end point, then the system, history-block and latest earlier-end points that keep the minimum to their neighbours", () => {
      // The end (750) first; the block (400) and the system prompt (150) keep 100 to their neighbours; 700 is 50 from the end, 500 is not.
      expect(kinds(placeCachePoints(layout, CACHE, 1))).toEqual(["system@0", "history@1", "previous@3", "end@5"]);
      expect(kinds(placeCachePoints({ ...layout, prefixTokens: [150, 400, 450, 500, 700, 900] }, CACHE, 1))).toEqual([
        "system@0",
        "history@1",
        "previous@4",
        "end@5",
      ]);
    });

    it("returns no point closer to its neighbours than the minimum, in the model's tokens", () => {
      expect(kinds(placeCachePoints(layout, { ...CACHE, minTokensPerCheckpoint: 300 }, 1))).toEqual(["history@1", "end@5"]);
      // A model counting twice the local tokens reaches the minimum twice as soon.
      expect(kinds(placeCachePoints(layout, { ...CACHE, minTokensPerCheckpoint: 300 }, 2))).toEqual(["system@0", "history@1", "end@5"]);
      expect(kinds(placeCachePoints(layout, { ...CACHE, minTokensPerCheckpoint: 100 }, 2))).toEqual(["system@0", "history@1", "previous@4", "end@5"]);
    });

    it("returns only the end point when no other keeps the minimum, and none when the whole request is under it", () => {
      expect(kinds(placeCachePoints(layout, { ...CACHE, minTokensPerCheckpoint: 700 }, 1))).toEqual(["end@5"]);
      expect(placeCachePoints(layout, { ...CACHE, minTokensPerCheckpoint: 751 }, 1)).toEqual([]);
    });

    it("returns no history point without a whole block", () => {
      expect(kinds(placeCachePoints({ ...layout, historyBlockEnd: undefined }, CACHE, 1))).toEqual(["system@0", "previous@3", "end@5"]);
    });

    it("returns no system point without a system message", () => {
      expect(kinds(placeCachePoints({ ...layout, system: undefined }, CACHE, 1))).toEqual(["history@1", "previous@3", "end@5"]);
    });

    it("returns the stable TTL on the system and history points and the turn TTL on the others", () => {
      const points = placeCachePoints({ ...layout, prefixTokens: [150, 400, 450, 500, 700, 900] }, CACHE, 1);
      expect(points.map((p) => p.ttl)).toEqual(["1h", "1h", "5m", "5m"]);
      expect(points.map((p) => p.prefixTokens)).toEqual([150, 400, 700, 900]);
    });
  });

  describe("withCachePoints", () => {
    it("returns the messages with a cachePoint block after the content of each marked message, the view's own left as they are", () => {
      const messages = [new SystemMessage("Be brief."), user("q1"), answer("a1"), user("q2"), calls([["c1", "sql_query"]]), result("c1", "north,1")];
      const sent = withCachePoints(messages, [
        { after: 0, kind: "system", ttl: "1h", prefixTokens: 1 },
        { after: 2, kind: "history", ttl: "1h", prefixTokens: 2 },
        { after: 3, kind: "previous", ttl: "5m", prefixTokens: 3 },
        { after: 5, kind: "end", ttl: "5m", prefixTokens: 4 },
      ]);
      expect(sent[0].content).toEqual([
        { type: "text", text: "Be brief." },
        { type: "cache_point", cachePoint: { type: "default", ttl: "1h" } },
      ]);
      expect(sent[2]).toBeInstanceOf(AIMessage);
      expect(sent[2].content).toEqual([
        { type: "text", text: "a1" },
        { type: "cache_point", cachePoint: { type: "default", ttl: "1h" } },
      ]);
      expect(sent[3]).toBeInstanceOf(HumanMessage);
      expect(sent[3].content).toEqual([
        { type: "text", text: "q2" },
        { type: "cache_point", cachePoint: { type: "default" } },
      ]);
      expect(sent[5]).toBeInstanceOf(ToolMessage);
      expect((sent[5] as ToolMessage).tool_call_id).toBe("c1");
      expect(sent[5].content).toEqual([
        { type: "text", text: "north,1" },
        { type: "cache_point", cachePoint: { type: "default" } },
      ]);
      expect(sent[4]).toBe(messages[4]);
      expect(messages[0].content).toBe("Be brief.");
      expect(() => validateConverseView(sent)).not.toThrow();
    });
  });

  describe("withCachePoints (content)", () => {
    const point = { after: 0, kind: "end" as const, ttl: "5m" as const, prefixTokens: 1 };

    it("returns block content with the point after its blocks, and empty text as no block", () => {
      const blocks = [{ type: "text" as const, text: "north" }];
      expect(withCachePoints([user("")], [point])[0].content).toEqual([{ type: "cache_point", cachePoint: { type: "default" } }]);
      expect(withCachePoints([new HumanMessage({ content: blocks })], [point])[0].content).toEqual([
        ...blocks,
        { type: "cache_point", cachePoint: { type: "default" } },
      ]);
    });

    it("throws InvalidModelViewError for a message type Converse does not take", () => {
      expect(() => withCachePoints([new ChatMessage("hi", "narrator")], [point])).toThrow(InvalidModelViewError);
      expect(() => withCachePoints([new ChatMessage("hi", "narrator")], [point])).toThrow(expect.objectContaining({ rule: "known-message-type" }));
    });
  });

  describe("isCachePointBlock", () => {
    it("returns true only for objects with a cachePoint", () => {
      expect(isCachePointBlock({ type: "cache_point", cachePoint: { type: "default" } })).toBe(true);
      expect([{ type: "text", text: "cachePoint" }, "cachePoint", null, undefined, 7].map(isCachePointBlock)).toEqual([false, false, false, false, false]);
    });
  });

  describe("buildModelView (cache points)", () => {
    const cached = policy({ finishedTurns: 2, historyBlockTurns: 3, cache: CACHE });

    it("returns no cache point without a cache policy", () => {
      expect(buildModelView([...turn(1), user("q2")], policy()).stats.cachePoints).toEqual([]);
    });

    it("returns a history point after the block and reads the latest question written after it", () => {
      const state = [...[1, 2, 3, 4].flatMap((n) => turn(n, 120)), user(`q5 ${rows(100)}`)];
      const view = buildModelView(state, cached);
      // Block: turns 1 and 2; turns 3 and 4 each ended a first call at their question.
      expect(view.messages.map((m) => m.content.toString().split(" ")[0])).toEqual(["You", "q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "q5"]);
      expect(kinds(view.stats.cachePoints)).toEqual(["history@4", "previous@7", "end@9"]);
      expect(view.stats.cachePoints[0].prefixTokens).toBe(view.messages.slice(0, 5).reduce((n, m) => n + countMessageTokens(m), 0));
    });

    it("returns the end point rather than the history point when the request ends within the minimum of the block", () => {
      // The next call reads this whole request back; a history point here would leave the question uncached on every call.
      const state = [...[1, 2].flatMap((n) => turn(n, 120)), user("q3 north?")];
      const view = buildModelView(state, cached);
      expect(view.messages.at(-1)?.content).toBe("q3 north?");
      expect(kinds(view.stats.cachePoints)).toEqual([`end@${view.messages.length - 1}`]);
    });

    it("returns, on a later call of the turn, a point where the previous call ended", () => {
      const first = [...turn(1, 300), user(`q2 ${rows(150)}`)];
      const second = [...first, calls([["c1", "sql_query"]]), result("c1", rows(200))];
      const before = buildModelView(first, policy({ finishedTurns: 1, cache: CACHE }));
      const after = buildModelView(second, policy({ finishedTurns: 1, cache: CACHE }));
      const end = before.stats.cachePoints.at(-1)!;
      expect(end).toMatchObject({ kind: "end", after: 3 });
      expect(after.stats.cachePoints.find((p) => p.after === end.after)).toEqual({ ...end, kind: "previous" });
      expect(after.stats.cachePoints.at(-1)).toMatchObject({ kind: "end", after: after.messages.length - 1 });
    });

    it("returns at most four points however long the turn", () => {
      const steps = Array.from({ length: 8 }, (_, i) => [calls([[`c${i}`, "sql_query"]]), result(`c${i}`, rows(300))]).flat();
      const view = buildModelView(
        [...turn(1, 400), ...turn(2, 400), user(`q3 ${rows(200)}`), ...steps],
        policy({ finishedTurns: 2, cache: { ...CACHE, minTokensPerCheckpoint: 1 } }),
      );
      expect(view.stats.cachePoints).toHaveLength(MAX_CACHE_POINTS);
    });
  });
});
