import { z } from "zod";
import { principalSchema, type Caller, type Principal } from "./principal.js";

/**
 * One gate a piece of stored data passed when it was fetched: the tool that fetched it, the roles
 * that allowed the tool then (`TOOL_ROLES`, a tool's own `allowedRoles`, an MCP entry's `roles`;
 * absent when the tool was open to everyone), and the user whose own identity it was fetched with
 * (a per-user credential such as an MCP OAuth token, or a data source told who asks: Power BI's
 * effective identity, a knowledge base's metadata filter, Athena's session tags). Stored beside the
 * content it governs: a tool message's `additional_kwargs`, an artifact, a recall entry's tool
 * output, a time-anchor ledger entry, a model call's record.
 */
export interface DataSource {
  tool: string;
  roles?: string[];
  user?: Principal;
}

/** What a piece of stored data needs to be seen: every one of its sources (a `read_tool_output` answer has its own and the artifact's). */
export type Provenance = DataSource[];

export const dataSourceSchema = z.object({
  tool: z.string().min(1),
  roles: z.array(z.string()).optional(),
  user: principalSchema.optional(),
});

export const provenanceSchema = z.array(dataSourceSchema);

/** The stored provenance of a value, or undefined when it carries none (written before provenance, or malformed). */
export function parseProvenance(value: unknown): Provenance | undefined {
  if (value === undefined || value === null) return undefined;
  const parsed = provenanceSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** Why a caller may not see something: the first source it fails, and how. */
export type Withheld = { tool: string } & ({ why: "role"; roles: string[] } | { why: "user" });

const samePrincipal = (a: Principal, b: Principal) => a.issuer === b.issuer && a.tenant === b.tenant && a.subject === b.subject;

/**
 * Could this caller have fetched this? The one decision of the data boundary (docs/security.md,
 * "The data boundary in shared threads"): every source must allow the caller, a source with roles
 * by one of them (as `ToolRegistry.mayUse` decides a tool), a source fetched with a user's own
 * identity by being that user. Undefined when the caller may see it; else the first source that
 * refuses, and why. Pure: the same provenance and caller give the same answer everywhere it is asked
 * (the model view, `search_conversation`, `read_tool_output`, the ledger, the inspector).
 */
export function withheldFrom(provenance: Provenance, viewer: Caller): Withheld | undefined {
  for (const source of provenance) {
    if (source.roles !== undefined && !source.roles.some((role) => viewer.roles.includes(role))) {
      return { tool: source.tool, why: "role", roles: [...source.roles] };
    }
    if (source.user !== undefined && !samePrincipal(source.user, viewer.principal)) return { tool: source.tool, why: "user" };
  }
  return undefined;
}

/** Whether the caller may see data of this provenance (`withheldFrom` found no source refusing). */
export function maySee(provenance: Provenance, viewer: Caller): boolean {
  return withheldFrom(provenance, viewer) === undefined;
}

/**
 * The short notice that stands where withheld data was: that something is hidden, from which tool,
 * and why, so the model says it cannot see it rather than guess.
 */
export function withheldNotice(withheld: Withheld): string {
  const roles = withheld.why === "role" ? withheld.roles : [];
  const why =
    withheld.why === "user"
      ? "it was fetched with another user's own credentials"
      : roles.length === 0
        ? "you may not use that tool"
        : `it needs the role ${roles.length === 1 ? roles[0] : `${roles.slice(0, -1).join(", ")} or ${roles.at(-1)}`}, which you do not have`;
  return `[Withheld: what ${withheld.tool} was asked and returned is hidden from you because ${why}. Do not guess it.]`;
}

/** Sources once each, in first-seen order: the provenance of something drawn from several. */
export function combinedProvenance(...parts: readonly (Provenance | undefined)[]): Provenance {
  const seen = new Set<string>();
  const out: Provenance = [];
  for (const source of parts.flatMap((p) => p ?? [])) {
    const key = JSON.stringify([source.tool, source.roles ?? null, source.user ? [source.user.issuer, source.user.tenant, source.user.subject] : null]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(source);
  }
  return out;
}
