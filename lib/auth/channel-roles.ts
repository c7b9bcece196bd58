import type { ChannelRolesMap } from "../config/config.js";
import type { ChannelIssuerKind, Principal } from "./principal.js";

/** Which of some groups a channel principal belongs to (Slack user groups, Entra groups). */
export interface GroupDirectory {
  memberOf(principal: Principal, groupIds: readonly string[]): Promise<string[]>;
}

/** `record[key]` for the record's own keys only: an id such as "constructor" never reaches Object's prototype. */
function own<T>(record: Record<string, T> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

export interface ChannelRolesOptions {
  /** `SLACK_ROLES` and `TEAMS_ROLES`, by workspace or tenant. */
  config: Record<ChannelIssuerKind, ChannelRolesMap>;
  /** Where group membership is looked up, per channel. Without one, group entries give no roles. */
  directories?: Partial<Record<ChannelIssuerKind, GroupDirectory>>;
}

/**
 * The roles of a Slack or Teams user, from configuration: their workspace's or tenant's default,
 * their own entry, and the entries of their groups. A principal of a workspace or tenant that is
 * not configured has none, so a role-gated tool stays closed to it.
 */
export class ChannelRoles {
  constructor(private readonly options: ChannelRolesOptions) {}

  async rolesOf(principal: Principal): Promise<string[]> {
    if (principal.issuer === "api" || principal.tenant === null) return [];
    const tenant = own(this.options.config[principal.issuer], principal.tenant);
    if (!tenant) return [];
    const roles = new Set([...(tenant.default ?? []), ...(own(tenant.users, principal.subject) ?? [])]);
    const groups = tenant.groups ?? {};
    const groupIds = Object.keys(groups);
    const directory = this.options.directories?.[principal.issuer];
    if (groupIds.length > 0 && directory) {
      for (const group of await directory.memberOf(principal, groupIds)) for (const role of own(groups, group) ?? []) roles.add(role);
    }
    return [...roles].sort();
  }
}
