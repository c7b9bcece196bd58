import type { ChannelRolesMap } from "../config/config.js";
import { RoleLookupError } from "../errors.js";
import type { ChannelIssuerKind, Principal } from "./principal.js";

/** `record[key]` for the record's own keys only: an id such as "constructor" never reaches Object's prototype. */
function own<T>(record: Record<string, T> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Which of the given groups a channel user belongs to: Slack user groups, Entra groups. */
export interface GroupDirectory {
  memberOf(principal: Principal, groupIds: readonly string[]): Promise<string[]>;
}

/**
 * The roles of a Slack or Teams user, from configuration (`SLACK_ROLES`, `TEAMS_ROLES`): their
 * workspace's or tenant's default, their own entry and the entries of their groups. A principal of
 * a workspace or tenant that is not configured has none, so a role-gated tool stays closed to it.
 * Groups are looked up only where the tenant's entry names some; a lookup that fails throws
 * `RoleLookupError` rather than run the turn with fewer roles than configured.
 */
export class ChannelRoles {
  constructor(
    private readonly config: Record<ChannelIssuerKind, ChannelRolesMap>,
    private readonly directories: Partial<Record<ChannelIssuerKind, GroupDirectory>> = {},
  ) {}

  async rolesOf(principal: Principal): Promise<string[]> {
    if (principal.issuer === "api" || principal.tenant === null) return [];
    const tenant = own(this.config[principal.issuer], principal.tenant);
    if (!tenant) return [];
    const roles = [...(tenant.default ?? []), ...(own(tenant.users, principal.subject) ?? [])];
    const groupIds = Object.keys(tenant.groups ?? {});
    if (groupIds.length > 0) {
      for (const group of await this.memberOf(principal, principal.issuer, groupIds)) roles.push(...(own(tenant.groups, group) ?? []));
    }
    return [...new Set(roles)].sort();
  }

  private async memberOf(principal: Principal, channel: ChannelIssuerKind, groupIds: string[]): Promise<string[]> {
    const directory = this.directories[channel];
    if (!directory) throw new RoleLookupError(`${channel} group roles are configured but ${channel} is not connected`, channel);
    try {
      return await directory.memberOf(principal, groupIds);
    } catch (error) {
      if (error instanceof RoleLookupError) throw error;
      throw new RoleLookupError(`${channel} group memberships could not be read`, channel, { cause: error });
    }
  }
}
