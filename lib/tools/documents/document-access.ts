import type { RetrievalFilter } from "@aws-sdk/client-bedrock-agent-runtime";
import type { Caller } from "../../auth/principal.js";
import { DEFAULT_DOCUMENT_GROUPS_KEY, DEFAULT_DOCUMENT_TENANTS_KEY, type DocumentAccessConfig } from "../../config/tools-config.js";
/** The value of either list that opens a document to every tenant, or to every member of an allowed tenant. */
export const EVERYONE = "*";

/** The metadata keys the filter reads (`DOCUMENTS_TENANTS_KEY`, `DOCUMENTS_GROUPS_KEY`). */
export type DocumentAccessKeys = DocumentAccessConfig;

export const DEFAULT_DOCUMENT_ACCESS_KEYS: DocumentAccessKeys = { tenantsKey: DEFAULT_DOCUMENT_TENANTS_KEY, groupsKey: DEFAULT_DOCUMENT_GROUPS_KEY };

/** Who a search is for, as documents' metadata names people: their tenant and their groups. */
export interface DocumentAudience {
  /** `issuer:tenant` (`slack:T0ACME`, `teams:<Entra tenant id>`, `api:acme`); null for an API caller without a tenant. */
  tenant: string | null;
  /** The caller's roles, which channel group memberships and token claims give (docs/security.md). */
  groups: readonly string[];
}

/** The audience of a caller: taken from the verified principal and roles, never from the model's arguments. */
export function audienceOf(caller: Caller): DocumentAudience {
  const { issuer, tenant } = caller.principal;
  return { tenant: tenant === null ? null : `${issuer}:${tenant}`, groups: caller.roles };
}

/** The values a document's list must contain one of: everyone's, then the audience's own. */
function accepted(own: readonly (string | null)[]): string[] {
  return [...new Set([EVERYONE, ...own.filter((value): value is string => value !== null && value.length > 0)])];
}

/** A document is found when its list under `key` contains one of `values` (a union member needs two or more filters). */
function anyOf(key: string, values: string[]): RetrievalFilter {
  const filters = values.map((value) => ({ listContains: { key, value } }));
  return filters.length === 1 ? filters[0]! : { orAll: filters };
}

/**
 * The Bedrock `Retrieve` filter (`vectorSearchConfiguration.filter`) that finds only documents the
 * audience may read: the tenants list holds `*` or their tenant, and the groups list holds `*` or one
 * of their groups. A document without either list is found by no one.
 */
export function retrievalFilter(audience: DocumentAudience, keys: DocumentAccessKeys = DEFAULT_DOCUMENT_ACCESS_KEYS): RetrievalFilter {
  return { andAll: [anyOf(keys.tenantsKey, accepted([audience.tenant])), anyOf(keys.groupsKey, accepted(audience.groups))] };
}
