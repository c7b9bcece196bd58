import type { BaseMessage } from "@langchain/core/messages";
import { parseProvenance, type Provenance } from "../auth/data-visibility.js";

/** Where a tool message keeps its provenance (`lib/auth/data-visibility.ts`): in its `additional_kwargs`, beside its content. */
export const PROVENANCE_KEY = "provenance";

/** The time-anchor ledger's line for a period set by a query whose output the viewer may not see (`withholdMessages`). */
export const WITHHELD_ANCHOR = "[withheld: a period set by a query whose output is hidden from you]";

/** Parsed once per stored value: every model call of a thread asks again of the same messages. */
const parsed = new WeakMap<object, Provenance | undefined>();

/** The stored provenance of a tool message, or undefined when it was stored without one. */
export function provenanceOf(message: BaseMessage): Provenance | undefined {
  const value = (message.additional_kwargs as Record<string, unknown> | undefined)?.[PROVENANCE_KEY];
  if (value === null || typeof value !== "object") return undefined;
  if (!parsed.has(value)) parsed.set(value, parseProvenance(value));
  return parsed.get(value);
}

/** Whether a call's arguments were withheld (`withholdMessages`) where they set a period: the ledger then says a withheld period was set. */
export function withheldPeriod(args: Record<string, unknown> | undefined): boolean {
  return args?.withheld === true && args.period === true;
}
