import type { BaseMessage } from "@langchain/core/messages";
import { messageText } from "./message-text.js";
import { countRecurringTextTokens } from "./token-counter.js";
import type { StandingEntry, StandingLedgerPolicy } from "./types.js";

/**
 * On in the product: the last 8 standing statements, within 240 tokens (a statement's line is 15–40).
 * Sized on the sufficiency suite (docs/sufficiency.md): its conversations state at most 3.
 */
export const DEFAULT_STANDING_LEDGER: StandingLedgerPolicy = { entries: 8, tokens: 240 };

export const STANDING_LEDGER_HEADING = "What the user asked for from then on, or said about themselves (newest wins):";

/** Most characters of a statement the ledger keeps. */
export const STANDING_STATEMENT_CHARS = 200;

/** Words that make an instruction govern later answers. */
const DIRECTIVE = /\b(?:from now on|going forward|from here on|henceforth|in future|by default|always|never)\b/i;
/** The user speaking of themselves (or their team). */
const SELF = /\b(?:i|i'm|i've|i'd|my|mine|we|we're|our)\b/i;
/** A statement that takes back an earlier one. */
const CORRECTION = /^(?:actually|correction|sorry|update|no)\b|\b(?:instead|now|any more|anymore|no longer|moved to|changed to)\b/i;
/** How amounts, tables and scope are shown: what a preference without "from now on" is about. */
const PRESENTATION =
  /\b(?:amounts?|figures?|numbers?|currency|eur|usd|gbp|dollars?|euros?|units?|format|decimals?|round(?:ed|ing)?|rows?|tables?|segment|region|scope)\b/i;
/** A request for work now, not a statement: "show me …", "list …", "can you …". */
const REQUEST = new RegExp(
  `^(?:${[
    "can could would will please what which who whom how why when where is are do does did",
    "show list give draft make create tell remind compare break find get send build run go put look",
  ]
    .join(" ")
    .split(" ")
    .join("|")})\\b`,
  "i",
);
/** A lead-in before the statement itself. */
const LEAD_IN = /^(?:before we start|for the record|fyi|just so you know|note|by the way|btw|ok|okay|also|and)\s*[:,-]?\s*/i;

/**
 * The user's question as a standing statement, or undefined when it is not one: an instruction that
 * governs later answers (units, currency, format, scope; "always", "never", "from now on"), a fact the
 * user states about themselves ("I look after the West region"), a target or constraint they set, or a
 * correction of one ("Actually I moved to the East region"). A question or a request for work now is not.
 */
export function standingStatement(question: string): string | undefined {
  const text = question.trim().replace(/\s+/g, " ");
  if (text.length === 0 || text.endsWith("?")) return undefined;
  const body = text.replace(LEAD_IN, "");
  const correcting = /^(?:actually|correction|sorry|update|no)\b/i.test(body);
  const statement = body.replace(/^(?:actually|correction|sorry|update|no)\s*[:,]?\s*/i, "");
  const standing =
    DIRECTIVE.test(statement) || (SELF.test(statement) && !REQUEST.test(statement)) || (correcting && (SELF.test(statement) || PRESENTATION.test(statement)));
  if (!standing) return undefined;
  return text.length <= STANDING_STATEMENT_CHARS ? text : `${text.slice(0, STANDING_STATEMENT_CHARS)}…`;
}

/** Words a later statement must share with an earlier one to take its place, whatever its wording. */
const SLOT = new RegExp(
  `\\b(?:${[
    "region manager boss team role amounts? currency units? round rows? tables? format segment",
    "account fiscal year target budget quota deadline email timezone language name",
  ]
    .join(" ")
    .split(" ")
    .join("|")})\\b`,
  "gi",
);

const words = (text: string) => new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length > 3));
const slots = (text: string) => new Set((text.toLowerCase().match(SLOT) ?? []).map((w) => w.replace(/s$/, "")));

/**
 * Whether a later standing statement takes the place of an earlier one: they are about the same
 * slot (the region, the manager, how amounts are shown, …), or the later one corrects ("actually",
 * "instead", "now") and shares a word of four letters or more with it.
 */
export function supersedes(later: string, earlier: string): boolean {
  const a = slots(later);
  for (const slot of slots(earlier)) if (a.has(slot)) return true;
  if (!CORRECTION.test(later)) return false;
  const b = words(earlier);
  for (const word of words(later)) if (b.has(word)) return true;
  return false;
}

/** The ledger's text for the system part; undefined when it is empty. */
export function standingText(ledger: readonly StandingEntry[]): string | undefined {
  if (ledger.length === 0) return undefined;
  return [STANDING_LEDGER_HEADING, ...ledger.map((e) => `- turn ${e.turn}: ${e.text}${e.corrects ? ` (replaces turn ${e.corrects})` : ""}`)].join("\n");
}

/** The ledger within the policy's bounds: its last `entries`, then without its oldest while its text is over `tokens`. */
export function boundedStanding(ledger: readonly StandingEntry[], policy: StandingLedgerPolicy): StandingEntry[] {
  let kept = ledger.slice(Math.max(0, ledger.length - Math.max(0, policy.entries)));
  while (kept.length > 0 && countRecurringTextTokens(standingText(kept) as string) > policy.tokens) kept = kept.slice(1);
  return kept;
}

/**
 * The ledger once a finished turn (its messages, from its question) has left the view: when its
 * question is a standing statement (`standingStatement`), the entries it supersedes leave and it is
 * added with its turn (numbered from 1) and the latest turn it replaces; then the ledger is bounded.
 * Oldest first. Pure and deterministic: folding the same turns in the same order gives the same
 * ledger, whether a turn was archived out of the thread or only left the window.
 */
export function standingAfterTurn(
  ledger: readonly StandingEntry[],
  turn: number,
  messages: readonly BaseMessage[],
  policy: StandingLedgerPolicy,
): StandingEntry[] {
  const question = messages.find((m) => m.type === "human");
  const text = question && standingStatement(messageText(question.content));
  if (!text) return boundedStanding(ledger, policy);
  const replaced = ledger.filter((e) => supersedes(text, e.text));
  const next: StandingEntry[] = ledger.filter((e) => !replaced.includes(e));
  const corrects = replaced.reduce<number | undefined>((latest, e) => Math.max(latest ?? 0, e.turn), undefined);
  next.push(corrects === undefined ? { turn, text } : { turn, text, corrects });
  return boundedStanding(next, policy);
}

/** `standingAfterTurn` over several turns, oldest first. */
export function standingAfterTurns(
  ledger: readonly StandingEntry[],
  turns: readonly { turnNumber: number; messages: readonly BaseMessage[] }[],
  policy: StandingLedgerPolicy,
): StandingEntry[] {
  let next = [...ledger];
  for (const t of turns) next = standingAfterTurn(next, t.turnNumber, t.messages, policy);
  return next;
}
