/**
 * The context-sufficiency suite's data, as kept in `bench/sufficiency/cases/` (one JSONL file per
 * kind, one case a line, and `fillers.json`). Written by `generate.ts`, read by the benchmark and
 * the `npm test` subset. Documented in `docs/sufficiency.md`.
 */
import { z } from "zod";

/** The ten kinds of follow-up the suite covers (issue 29), in its order. */
export const CASE_KINDS = [
  "answer-entity",
  "result-entity",
  "carried-parameters",
  "time-anchor",
  "correction",
  "far-reference",
  "several-tools",
  "user-fact",
  "long-active-turn",
  "offloaded-output",
  // Issue 46: kinds written independently of the policy, before it changed (cases kept unchanged after).
  "standing-instruction",
  "digest-excerpt",
  "archived-output",
  "cross-turn-comparison",
  "ordinal-answer",
  "tool-error",
  "multi-hop",
  "approval-outcome",
  "corrected-fact",
] as const;
export type CaseKind = (typeof CASE_KINDS)[number];

/** The kinds added by issue 46, after the first ten. */
export const ISSUE_46_KINDS: readonly CaseKind[] = CASE_KINDS.slice(10);

/** One tool call as it ran: the arguments the model gave and the tool's real output, whole. */
export const toolCallSchema = z.strictObject({
  /** Unique within the case. */
  id: z.string().min(1),
  name: z.enum(["sql_query", "search_documents", "query_semantic_model", "create_follow_up"]),
  args: z.record(z.string(), z.unknown()),
  /** The tool's output as the product's tool returned it (a failure as the registry words it, a call not run as the approval gate does). */
  output: z.string(),
  /** `error` when the call failed or did not run (the ToolMessage's status). */
  status: z.literal("error").optional(),
});
export type ToolCallSpec = z.infer<typeof toolCallSchema>;

/**
 * A finished turn: the user's question, the model's steps (each step one assistant message with
 * its parallel tool calls, each answered by its result), then the final answer.
 */
export const turnSchema = z.strictObject({
  question: z.string().min(1),
  steps: z.array(z.array(toolCallSchema).min(1)),
  answer: z.string().min(1),
});
export type TurnSpec = z.infer<typeof turnSchema>;

/** A turn of `fillers.json`, shared by many cases to keep the data small: ordinary work chatter. */
export const fillerRefSchema = z.strictObject({ filler: z.string().min(1) });
export type FillerRef = z.infer<typeof fillerRefSchema>;

/**
 * What the follow-up needs. It counts as present in a text when `text`, or one of `alternatives`,
 * occurs in it (case-insensitive, spaces collapsed, thousands separators ignored).
 */
export const evidenceSchema = z.strictObject({
  id: z.string().min(1),
  /** Where it was: a cell or row of a tool result, a statement of an answer, a fact the user stated, a resolved parameter of a query. */
  source: z.enum(["tool-result", "answer", "user", "parameters"]),
  /** Index in `turns` of the turn it is from, or `active` for the follow-up's own turn. */
  turn: z.union([z.number().int().min(0), z.literal("active")]),
  text: z.string().min(1),
  alternatives: z.array(z.string().min(1)).optional(),
  /**
   * A fact this unit corrects ("I look after the West region" for "I moved to the East region"): the
   * view or a search that shows it without this unit returns a stale fact without its correction.
   */
  supersedes: z.string().min(1).optional(),
});
export type Evidence = z.infer<typeof evidenceSchema>;

export const caseSchema = z.strictObject({
  id: z.string().regex(/^[a-z-]+-\d{3}$/),
  kind: z.enum(CASE_KINDS),
  /** What the case tests, in a line. */
  note: z.string(),
  /** The earlier, finished turns, oldest first. */
  turns: z.array(z.union([turnSchema, fillerRefSchema])).min(1),
  /** The follow-up: the question of the turn the view is built for. */
  followUp: z.string().min(1),
  /** Tool steps the follow-up's turn already ran (a long active turn, an offloaded output in it). */
  activeSteps: z.array(z.array(toolCallSchema).min(1)).default([]),
  evidence: z.array(evidenceSchema).min(1),
});
export type SufficiencyCase = z.infer<typeof caseSchema>;

export const fillersSchema = z.record(z.string(), turnSchema);
export type Fillers = z.infer<typeof fillersSchema>;
