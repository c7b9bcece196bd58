/**
 * Whether a question points back at something said earlier in the conversation, as people phrase
 * it: "I mentioned before…", "remind me…", "what did we decide about…", "as you said", "what was
 * the vendor again?", or a question about their own facts ("what's our budget?"). The offline
 * model searches the conversation for such a question when earlier turns are out of its view.
 *
 * Read word by word (no backtracking pattern), so the time is linear in the question's length.
 */

/** A set of the space-separated words. */
const wordSet = (list: string): ReadonlySet<string> => new Set(list.split(" "));

const SUBJECTS = wordSet("i we you");
/** Past forms that, after I, we or you, report something said or settled in the conversation. */
const REPORTED = wordSet(
  "said mentioned told discussed agreed decided noted shared gave talked brought covered settled wrote " +
    "picked chose suggested recommended promised planned set named called went",
);
/** Base forms after "did I / we / you": "what did we decide", "which one did you pick". */
const ASKED_BACK = wordSet(
  "say tell mention discuss agree decide note share give pick choose settle suggest recommend promise " +
    "plan set name call write ask want need use land go talk cover",
);
/** Words between a subject and its verb that keep the meaning: "I already mentioned", "we just agreed". */
const FILLERS = wordSet("already just previously earlier once also all both had have did");
/** Words that place a question in the past of the conversation. */
const BACK_IN_TIME = wordSet("earlier before previously already again above originally");
const BACK_IN_TIME_PHRASES = "last time, a while ago, at the start, at the beginning, the other day".split(", ").map((phrase) => phrase.split(" "));
/** Phrases that ask for memory outright. */
const RECALL_PHRASES = (
  "remind me, refresh my memory, you remember, you recall, i forgot, i forget, going back to, back to what, " +
  "we were talking about, we were saying, as discussed, as agreed, as mentioned"
)
  .split(", ")
  .map((phrase) => phrase.split(" "));
const QUESTION_WORDS = wordSet("what what's whats which who who's whom whose when when's where where's how how's");
/** Words that make a question about the asker's own facts: "what's our budget", "when is my flight". */
const OWN = wordSet("my our mine ours");
const DEFINITE = wordSet("the that those this these my our");

function hasPhrase(words: readonly string[], phrase: readonly string[]): boolean {
  for (let i = 0; i + phrase.length <= words.length; i++) {
    let j = 0;
    while (j < phrase.length && words[i + j] === phrase[j]) j++;
    if (j === phrase.length) return true;
  }
  return false;
}

/** "I mentioned", "we already agreed", "you told me": a subject, at most two fillers, a reported verb. */
function reportsSpeech(words: readonly string[]): boolean {
  for (let i = 0; i < words.length; i++) {
    if (!SUBJECTS.has(words[i] as string)) continue;
    let j = i + 1;
    while (j < words.length && j <= i + 2 && FILLERS.has(words[j] as string)) j++;
    if (REPORTED.has(words[j] as string)) return true;
  }
  return false;
}

/** "what did we decide", "which vendor did you pick", "what do I call it": did/do, a subject, a verb of the conversation. */
function asksBack(words: readonly string[]): boolean {
  for (let i = 0; i + 2 < words.length; i++) {
    if ((words[i] === "did" || words[i] === "had") && SUBJECTS.has(words[i + 1] as string) && ASKED_BACK.has(words[i + 2] as string)) return true;
  }
  return false;
}

/** The question's words, lowercased, apostrophes kept ("what's"), curly ones made straight. */
export function questionWords(question: string): string[] {
  return (
    question
      .toLowerCase()
      .replace(/[\u2018\u2019]/g, "'")
      .match(/[a-z0-9']+/g) ?? []
  );
}

export function refersBack(question: string): boolean {
  const words = questionWords(question);
  if (words.length === 0) return false;
  if (RECALL_PHRASES.some((phrase) => hasPhrase(words, phrase))) return true;
  if (reportsSpeech(words) || asksBack(words)) return true;
  const isQuestion = QUESTION_WORDS.has(words[0] as string) || question.trimEnd().endsWith("?");
  if (!isQuestion) return false;
  if (words.some((word) => BACK_IN_TIME.has(word)) || BACK_IN_TIME_PHRASES.some((phrase) => hasPhrase(words, phrase))) return true;
  const asked = QUESTION_WORDS.has(words[0] as string);
  if (asked && words.some((word) => OWN.has(word))) return true;
  // "What was the vendor's name?": the past tense of a fact, with a definite subject.
  for (let i = 0; asked && i + 1 < words.length; i++) {
    if ((words[i] === "was" || words[i] === "were") && DEFINITE.has(words[i + 1] as string)) return true;
  }
  return false;
}
