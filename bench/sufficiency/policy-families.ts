import { DEFAULT_PARAMETER_LEDGER, DEFAULT_STANDING_LEDGER, DEFAULT_TURN_DIGEST } from "../../lib/model-view/index.js";
/** Every policy of the benchmark at each of its settings; the one marked default is in the per-kind tables. */
import {
  clearToolUses,
  deepAgentsEviction,
  fullReplay,
  langchainTrim,
  openAiTrimmer,
  seedPolicy,
  strandsWindow,
  threadwise,
  threadwisePolicy,
  type Policy,
} from "./policies.js";

export interface PolicyFamily {
  name: string;
  settings: Policy[];
}

const named = (name: string, policies: Policy[]): PolicyFamily => ({ name, settings: policies.map((p) => ({ ...p, name })) });

export const POLICY_FAMILIES: PolicyFamily[] = [
  named("full replay", [fullReplay()]),
  named(
    "seed article",
    [2, 4, 6, 10].map((n) => seedPolicy(n)),
  ),
  named(
    "Threadwise before issue 29",
    [2, 4, 6, 10].map((n) => threadwise("Threadwise before issue 29", threadwisePolicy({ finishedTurns: n }), n === 6)),
  ),
  named(
    "Threadwise",
    [2, 4, 6, 10].map((n) =>
      threadwise(
        "Threadwise",
        threadwisePolicy({
          finishedTurns: n,
          turnDigest: DEFAULT_TURN_DIGEST,
          parameterLedger: DEFAULT_PARAMETER_LEDGER,
          standingLedger: DEFAULT_STANDING_LEDGER,
        }),
        n === 6,
      ),
    ),
  ),
  named(
    "LangChain trimMessages",
    [4_000, 8_000, 24_000, 64_000].map((t) => langchainTrim(t)),
  ),
  named(
    "LangChain ClearToolUsesEdit",
    [25_000, 50_000, 100_000].map((t) => clearToolUses(t, 3)),
  ),
  named(
    "Strands sliding window",
    [10, 20, 40, 80].map((w) => strandsWindow(w)),
  ),
  named(
    "OpenAI ToolOutputTrimmer",
    [1, 2, 4].map((r) => openAiTrimmer(r)),
  ),
  named(
    "Deep Agents eviction",
    [5_000, 20_000].map((t) => deepAgentsEviction(t)),
  ),
];
