import { stemmer } from "stemmer";

/**
 * Words that carry no topic, left out of the index and of queries. A short list of our own: the
 * multi-language lists on npm add hundreds of kilobytes to every Lambda bundle. It also holds the
 * words people use to point back ("what did I say", "as we discussed"), which name no topic either.
 */
const STOPWORDS = new Set(
  (
    "a about above after again all also am an and any are as at be because been before being below between both but by can could did do does doing " +
    "done down during each few for from further had has have having he her here hers him his how i if in into is it its itself just me more most my " +
    "myself no nor not now of off on once only or other our ours out over own same she should so some such than that the their theirs them then " +
    "there these they this those through to too under until up very was we were what when where which while who whom why will with would you your " +
    "yours yourself s t ll re ve d m let lets please ok okay yes thanks thank " +
    "say said says tell told mention mentioned discuss discussed earlier before previously remember recall remind ago back"
  ).split(" "),
);

/**
 * ISO dates stay whole (and their parts are terms too); numbers lose their thousands separators and
 * are not stemmed. Only a date holds a "-", and a token starts with a letter or a digit.
 */
const TOKEN = /\d{4}-\d{2}-\d{2}|\p{N}+(?:[.,]\p{N}+)*|\p{L}[\p{L}\p{M}'’]*/gu;

function normalize(token: string): string | undefined {
  // 1,500 and 1500 are one number; 27.7 keeps its point.
  if (/^\p{N}/u.test(token)) return token.replace(/,(?=\d{3}\b)/g, "");
  const word = token.replace(/['’]s$/u, "").replace(/['’]/gu, "");
  return STOPWORDS.has(word) ? undefined : stemmer(word);
}

/** The index terms of a text, in order, repeats kept: lower-cased, stop words out, Porter-stemmed. */
export function recallTerms(text: string): string[] {
  const terms: string[] = [];
  for (const match of text.toLowerCase().normalize("NFKC").matchAll(TOKEN)) {
    const token = match[0];
    const term = normalize(token);
    if (term === undefined) continue;
    terms.push(term);
    if (token.includes("-")) terms.push(...token.split("-"));
  }
  return terms;
}

/** Term frequencies of a text. */
export function termFrequencies(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const term of recallTerms(text)) counts.set(term, (counts.get(term) ?? 0) + 1);
  return counts;
}

/** Quoted phrases of a query (`"EMEA numbers"`), lower-cased, for exact matching. */
export function quotedPhrases(query: string): string[] {
  return [...query.matchAll(/["“]([^"”]{2,200})["”]/gu)].map((m) => m[1].toLowerCase().replace(/\s+/g, " ").trim()).filter(Boolean);
}
