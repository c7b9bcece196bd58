import type { ChannelRolesMap } from "../config/config.js";
import type { ChannelIssuerKind, Principal } from "./principal.js";

/** `record[key]` for the record's own keys only: an id such as "constructor" never reaches Object's prototype. */
function own<T>(record: Record<string, T> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * The roles of a Slack or Teams user, from configuration (`SLACK_ROLES`, `TEAMS_ROLES`): their
 * workspace's or tenant's default and their own entry. A principal of a workspace or tenant that
 * is not configured has none, so a role-gated tool stays closed to it.
 */
export class ChannelRoles {
  constructor(private readonly config: Record<ChannelIssuerKind, ChannelRolesMap>) {}

  rolesOf(principal: Principal): string[] {
    if (principal.issuer === "api" || principal.tenant === null) return [];
    const tenant = own(this.config[principal.issuer], principal.tenant);
    if (!tenant) return [];
    return [...new Set([...(tenant.default ?? []), ...(own(tenant.users, principal.subject) ?? [])])].sort();
  }
}
