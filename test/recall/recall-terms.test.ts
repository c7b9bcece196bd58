import { describe, expect, it } from "vitest";
import { quotedPhrases, recallTerms } from "../../lib/recall/recall-terms.js";

describe("recallTerms", () => {
  it("returns Porter stems, so word forms of one word meet", () => {
    expect(recallTerms("We decided to exclude returns")).toEqual(recallTerms("decide excluding returned"));
  });

  it("returns no stop words and no words that only point back", () => {
    expect(recallTerms("What did I say about the budget, as we discussed earlier?")).toEqual(["budget"]);
  });

  it("returns ISO dates whole and in parts, and numbers without thousands separators", () => {
    expect(recallTerms("Due 2026-11-15, limit 1,500 at 27.7%")).toEqual(["due", "2026-11-15", "2026", "11", "15", "limit", "1500", "27.7"]);
  });

  it("returns possessives without their ending", () => {
    expect(recallTerms("Ada's numbers")).toEqual(recallTerms("Ada number"));
  });
});

describe("quotedPhrases", () => {
  it("returns quoted phrases lower-cased, with their spaces collapsed", () => {
    expect(quotedPhrases('what about "EMEA   Numbers" and “gross margin”?')).toEqual(["emea numbers", "gross margin"]);
  });
});
