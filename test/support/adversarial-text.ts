import fc from "fast-check";

/** The longest user message (`MAX_MESSAGE_CHARS`): the size the linear-time tests and bench/linear-time-benchmark.ts use. */
export const ADVERSARIAL_CHARS = 16_000;

/** Every character JavaScript's `\s` matches, and the Unicode blanks it does not. */
export const WHITESPACE = [
  "\t",
  "\n",
  "\v",
  "\f",
  "\r",
  " ",
  "\u0085",
  "\u00a0",
  "\u1680",
  "\u2000",
  "\u2001",
  "\u2002",
  "\u2003",
  "\u2004",
  "\u2005",
  "\u2006",
  "\u2007",
  "\u2008",
  "\u2009",
  "\u200a",
  "\u2028",
  "\u2029",
  "\u202f",
  "\u205f",
  "\u3000",
  "\ufeff",
  "\u200b",
  "\u180e",
];
export const COMBINING = ["\u0301", "\u0308", "\u20d7", "\u0e49", "\ufe0f", "\u200d", "\u034f", "\u1ab0"];
export const EMOJI = ["👩‍👩‍👧", "🏳️‍🌈", "👍🏽", "🇺🇸", "🧑🏿‍🤝‍🧑🏻", "❤️‍🔥"];
export const LETTERS_AND_DIGITS = ["a", "Z", "é", "ß", "漢", "ㄱ", "я", "ب", "1", "١", "Ⅻ", "_"];
export const SYMBOLS = ["!", "=", "'", '"', "<", ">", "@", "|", "{", "}", "[", "]", "\\", "/", "`", ";", ",", ":", "-", "*", "&", "\ud83d", "\udc4d"];
/** Fragments the parsers look for: mentions, markup, JSON, SQL, header tokens, the offline model's phrases. */
export const FRAGMENTS = [
  "<@U1>",
  "<@U1|",
  "<@",
  "<at>",
  "</at>",
  "<at>x",
  "&nbsp;",
  "respond-async",
  ", ",
  "'s",
  '{"a":',
  '"a":[',
  "sql_query {",
  "handle ",
  "my x is ",
  "what is my ",
  "--",
  "/*",
  "*/",
  "''",
  "WITH x AS (",
  "SELECT ",
  "Bearer ",
  '\\"',
];

/** A text of any length built from one pattern, named for the failure message. */
export interface AdversarialShape {
  name: string;
  text(chars: number): string;
}

function repeatTo(unit: string, chars: number): string {
  return unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
}

/** `[[[…]]]` or `{"a":{"a":…}}`: nesting as deep as the length allows. */
const NESTED: AdversarialShape[] = [
  { name: "nested arrays", text: (chars) => `${"[".repeat(Math.floor(chars / 2))}${"]".repeat(Math.floor(chars / 2))}` },
  {
    name: "nested objects",
    text: (chars) => {
      const depth = Math.floor((chars - 1) / 6);
      return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
    },
  },
];

/**
 * Adversarial shapes: a long run of one to three units (a whitespace run, a run of combining marks,
 * an emoji sequence, repeated markup), a run of one unit ending in another (where backtracking
 * regexes look ahead), or deep nesting.
 */
export function adversarialShape(): fc.Arbitrary<AdversarialShape> {
  const unit = fc.constantFrom(...ALL_UNITS);
  const repeated = fc.array(unit, { minLength: 1, maxLength: 3 }).map((units): AdversarialShape => {
    const pattern = units.join("");
    return { name: `repeated ${JSON.stringify(pattern)}`, text: (chars) => repeatTo(pattern, chars) };
  });
  const runThenTail = fc.tuple(unit, unit).map(
    ([run, tail]): AdversarialShape => ({
      name: `${JSON.stringify(run)} run ending in ${JSON.stringify(tail)}`,
      text: (chars) => `${repeatTo(run, chars - tail.length)}${tail}`,
    }),
  );
  return fc.oneof({ weight: 4, arbitrary: repeated }, { weight: 2, arbitrary: runThenTail }, { weight: 1, arbitrary: fc.constantFrom(...NESTED) });
}

/** Every unit of the pools. */
export const ALL_UNITS = [...WHITESPACE, ...COMBINING, ...EMOJI, ...LETTERS_AND_DIGITS, ...SYMBOLS, ...FRAGMENTS];

/**
 * A run of each unit ending in a letter (where a backtracking pattern that looks past the run
 * fails, and retries), and the nestings: the shapes checked every time, beside random ones.
 */
export function runShapes(units: readonly string[] = ALL_UNITS): AdversarialShape[] {
  return [...units.map((u) => ({ name: `run of ${JSON.stringify(u)} ending in "x"`, text: (chars: number) => `${repeatTo(u, chars - 1)}x` })), ...NESTED];
}
