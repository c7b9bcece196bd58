import { readFileSync } from "node:fs";

// Stands in for `js-tiktoken/ranks/cl100k_base` in the Lambda bundles. The ranks are 1 MB of
// data, not code: they ship beside the bundle as a JSON file (written by writeTokenizerData in bundling.ts)
// and are read on first use, so they neither bloat the code bundle nor slow its import.
interface Ranks {
  pat_str: string;
  special_tokens: Record<string, number>;
  bpe_ranks: string;
}

/** File name of the ranks beside the bundle. */
export const TOKENIZER_DATA_FILE = "cl100k_base.json";

let ranks: Ranks | undefined;
const load = (): Ranks => (ranks ??= JSON.parse(readFileSync(new URL(`./${TOKENIZER_DATA_FILE}`, import.meta.url), "utf8")) as Ranks);

export default {
  get pat_str() {
    return load().pat_str;
  },
  get special_tokens() {
    return load().special_tokens;
  },
  get bpe_ranks() {
    return load().bpe_ranks;
  },
};
