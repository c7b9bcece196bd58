import { describe, expect, it } from "vitest";
import { buildModelView, DEFAULT_STANDING_LEDGER, standingAfterTurns, standingStatement, standingText, supersedes } from "../../lib/model-view/index.js";
import { answer, policy, user } from "./histories.js";

const turns = (questions: string[]) => questions.map((q, i) => ({ turnNumber: i + 1, messages: [user(q), answer("Noted.")] }));

describe("standingStatement", () => {
  it("returns instructions that govern later answers and facts the user states about themselves", () => {
    expect(standingStatement("From now on, report all amounts in EUR.")).toBe("From now on, report all amounts in EUR.");
    expect(standingStatement("Never give me more than five rows in a table, please.")).toBeDefined();
    expect(standingStatement("Before we start: I look after the West region.")).toBeDefined();
    expect(standingStatement("Actually, show amounts in millions of dollars instead.")).toBeDefined();
  });

  it("returns undefined for questions and requests for work now", () => {
    expect(standingStatement("How is my region doing?")).toBeUndefined();
    expect(standingStatement("List the top customers in West for July 2026.")).toBeUndefined();
    expect(standingStatement("Show me that customer's order lines that month.")).toBeUndefined();
    expect(standingStatement("Thanks, that's helpful.")).toBeUndefined();
  });
});

describe("supersedes", () => {
  it("returns true for a later statement about the same slot, or a correction sharing a word", () => {
    expect(supersedes("Actually I moved to the East region.", "I look after the West region.")).toBe(true);
    expect(supersedes("Actually, show amounts in millions of dollars instead.", "I want amounts in thousands of euros.")).toBe(true);
    expect(supersedes("My manager is Lena Novak.", "From now on, report all amounts in EUR.")).toBe(false);
  });
});

describe("standingAfterTurns", () => {
  it("returns the statements of the turns folded, a correction replacing what it corrects with both turn numbers", () => {
    const ledger = standingAfterTurns(
      [],
      turns(["I look after the West region.", "What was revenue in July?", "From now on, report all amounts in EUR.", "Actually I moved to the East region."]),
      DEFAULT_STANDING_LEDGER,
    );
    expect(ledger).toEqual([
      { turn: 3, text: "From now on, report all amounts in EUR." },
      { turn: 4, text: "Actually I moved to the East region.", corrects: 1 },
    ]);
    // The stale fact is not in the ledger's text: a corrected fact never shows without its correction.
    expect(standingText(ledger)).not.toContain("West");
  });

  it("returns at most the policy's entries, the newest", () => {
    const ledger = standingAfterTurns([], turns(["Always use EUR.", "Never show SMB.", "Always round figures."]), { entries: 2, tokens: 200 });
    expect(ledger.map((e) => e.turn)).toEqual([2, 3]);
  });
});

describe("buildModelView", () => {
  describe("with a standing ledger", () => {
    it("returns the standing statements of turns before the window in the system part, 25 turns later", () => {
      const thread = [user("From now on, report all amounts in EUR."), answer("Understood.")];
      for (let i = 0; i < 25; i++) thread.push(user(`Question ${i}?`), answer(`Answer ${i}.`));
      thread.push(user("What was revenue in West in July?"));
      const view = buildModelView(
        thread,
        policy({ systemPrompt: "Be brief.", finishedTurns: 6, historyBlockTurns: 6, standingLedger: DEFAULT_STANDING_LEDGER }),
      );
      expect(view.messages[0].content).toContain("- turn 1: From now on, report all amounts in EUR.");
      // Without the ledger the instruction is nowhere in the view (before issue 46).
      const before = buildModelView(thread, policy({ systemPrompt: "Be brief.", finishedTurns: 6, historyBlockTurns: 6 }));
      expect(JSON.stringify(before.messages.map((m) => m.content))).not.toContain("EUR");
    });
  });
});
