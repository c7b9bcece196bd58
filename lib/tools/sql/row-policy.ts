import type { Caller } from "../../auth/principal.js";

/** The role that every caller has for a row policy's purposes. */
export const EVERY_ROLE = "*";

/**
 * Which regions' rows each role may read (`SQL_ROW_POLICY`): a role (or `*`, every caller) to a
 * list of region names, or to `*` for every region.
 */
export type RowPolicy = Readonly<Record<string, "*" | readonly string[]>>;

/** The regions a caller may read under a policy: `*` for all, otherwise the union of their roles' entries (possibly none). */
export function regionsOf(caller: Caller, policy: RowPolicy): "*" | string[] {
  const regions = new Set<string>();
  for (const role of [EVERY_ROLE, ...caller.roles]) {
    const entry = Object.hasOwn(policy, role) ? policy[role] : undefined;
    if (entry === "*") return "*";
    for (const region of entry ?? []) regions.add(region);
  }
  return [...regions].sort();
}
