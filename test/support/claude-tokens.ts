import { getTokenizer } from "@anthropic-ai/tokenizer";

/**
 * Token counts by Anthropic's published Claude tokenizer (`@anthropic-ai/tokenizer`, a BPE unlike
 * cl100k: fewer tokens on English prose, more on code), standing in for the model's own count so the
 * product's calibration from cl100k is exercised. The package's `countTokens` builds and frees the
 * encoder on every call (about a second); one encoder is kept instead.
 */
let tokenizer: ReturnType<typeof getTokenizer> | undefined;

/** Texts whose counts are remembered: a conversation sends the same texts on every call. */
const MEMO_ENTRIES = 50_000;
const memo = new Map<string, number>();

export function countClaudeTokens(text: string): number {
  if (text.length === 0) return 0;
  const known = memo.get(text);
  if (known !== undefined) return known;
  tokenizer ??= getTokenizer();
  const tokens = tokenizer.encode(text.normalize("NFKC"), "all").length;
  if (memo.size >= MEMO_ENTRIES) memo.clear();
  memo.set(text, tokens);
  return tokens;
}
