import { describe, expect, it } from "vitest";
import { quotedPhrases, recallTerms, termFrequencies } from "../../lib/recall/recall-terms.js";

describe("recallTerms", () => {
  it("returns Porter stems, so word forms of one word meet", () => {
    expect(recallTerms("We decided to exclude returns")).toEqual(recallTerms("decide excluding returned"));
  });

  it("returns no stop words and no words that only point back", () => {
    expect(recallTerms("What did I say about the budget, as we discussed earlier?")).toEqual(["budget"]);
  });

  it("returns ISO dates whole and in parts, and numbers without thousands separators", () => {
    expect(recallTerms("Due 2026-11-15, limit 1,500 at 27.7%")).toEqual(["due", "2026-11-15", "2026", "11", "15", "limit", "1500", "27.7"]);
    expect(recallTerms("42 of 9,500 and 1,250,000; 0,5")).toEqual(["42", "9500", "1250000", "0,5"]);
  });

  it("returns numbers in any script as numbers, not stemmed", () => {
    expect(recallTerms("٣٤ items")).toEqual(["٣٤", "item"]);
  });

  it("returns no courtesy words", () => {
    expect(recallTerms("Thanks, please let me know. OK, yes!")).toEqual(["know"]);
  });

  it("returns possessives without their ending, and words without their apostrophes", () => {
    expect(recallTerms("Ada's numbers")).toEqual(recallTerms("Ada number"));
    expect(recallTerms("O’Sullivan's")).toEqual(["osullivan"]);
  });
});

describe("termFrequencies", () => {
  it("returns how often each term occurs", () => {
    expect(termFrequencies("Returns, returned, and the EMEA return")).toEqual(
      new Map([
        ["return", 3],
        ["emea", 1],
      ]),
    );
  });
});

describe("quotedPhrases", () => {
  it("returns quoted phrases lower-cased, with their spaces collapsed", () => {
    expect(quotedPhrases('what about "EMEA   Numbers" and “gross margin”?')).toEqual(["emea numbers", "gross margin"]);
    expect(quotedPhrases('" Net Sales " or "   "')).toEqual(["net sales"]);
  });
});
