import type { BaseMessage } from "@langchain/core/messages";
import { parseProvenance, type Provenance } from "../auth/data-visibility.js";

/** Where a tool message keeps its provenance (`lib/auth/data-visibility.ts`): in its `additional_kwargs`, beside its content. */
export const PROVENANCE_KEY = "provenance";

/** The time-anchor ledger's line for a period set by a query whose output the viewer may not see (`withholdMessages`). */
export const WITHHELD_ANCHOR = "[withheld: a period set by a query whose output is hidden from you]";

/** The stored provenance of a tool message, or undefined when it was stored without one. */
export function provenanceOf(message: BaseMessage): Provenance | undefined {
  return parseProvenance((message.additional_kwargs as Record<string, unknown> | undefined)?.[PROVENANCE_KEY]);
}

/** Whether a call's arguments were withheld (`withholdMessages`) where they set a period: the ledger then says a withheld period was set. */
export function withheldPeriod(args: Record<string, unknown> | undefined): boolean {
  return args?.withheld === true && args.period === true;
}
