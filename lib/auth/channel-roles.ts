import type { ChannelRolesMap, TenantRoles } from "../config/auth-config.js";
import { RoleLookupError } from "../errors.js";
import { jsonConsoleLogger, type StructuredLogger } from "../logger.js";
import type { ChannelIssuerKind, Principal } from "./principal.js";

/** `record[key]` for the record's own keys only: an id such as "constructor" never reaches Object's prototype. */
function own<T>(record: Record<string, T> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Which of the given groups a channel user belongs to: Slack user groups, Entra groups. */
export interface GroupDirectory {
  memberOf(principal: Principal, groupIds: readonly string[]): Promise<string[]>;
  /**
   * Whether the directory calls the user a guest of the tenant: for Teams, Entra's `userType`
   * (a B2B user of another organisation is "Guest" in the host's directory, with the host's
   * tenant id). A channel whose identities already name the user's own organisation (Slack's
   * `user_team`) has none. Throws when it cannot tell.
   */
  isGuest?(principal: Principal): Promise<boolean>;
}

/**
 * The roles of a Slack or Teams user, from configuration (`SLACK_ROLES`, `TEAMS_ROLES`): their
 * workspace's or tenant's default, their own entry and the entries of their groups. A principal of
 * a workspace or tenant that is not configured has none, so a role-gated tool stays closed to it.
 * Groups are looked up only where the tenant's entry names some; a lookup that fails throws
 * `RoleLookupError` rather than run the turn with fewer roles than configured.
 *
 * A Teams guest (a user the tenant's directory calls a guest) gets the tenant's `guest` roles and
 * their own entry, never `default` nor `groups`. The directory is asked only where the answer can
 * change the roles; when it cannot answer, the user is taken for a guest (fail closed) and a line
 * is logged.
 */
export class ChannelRoles {
  constructor(
    private readonly config: Record<ChannelIssuerKind, ChannelRolesMap>,
    private readonly directories: Partial<Record<ChannelIssuerKind, GroupDirectory>> = {},
    /** Default: JSON lines on the console (`jsonConsoleLogger`). */
    private readonly logger: StructuredLogger = jsonConsoleLogger,
  ) {}

  async rolesOf(principal: Principal): Promise<string[]> {
    if (principal.issuer === "api" || principal.tenant === null) return [];
    const tenant = own(this.config[principal.issuer], principal.tenant);
    if (!tenant) return [];
    const personal = own(tenant.users, principal.subject) ?? [];
    if (principal.issuer === "teams" && (await this.isTeamsGuest(principal, tenant))) return [...new Set([...(tenant.guest ?? []), ...personal])].sort();
    const roles = [...(tenant.default ?? []), ...personal];
    const groupIds = Object.keys(tenant.groups ?? {});
    if (groupIds.length > 0) {
      for (const group of await this.memberOf(principal, principal.issuer, groupIds)) roles.push(...(own(tenant.groups, group) ?? []));
    }
    return [...new Set(roles)].sort();
  }

  /** Whether a Teams user is a guest, asked only when a guest's roles would differ from a member's; unknown is a guest. */
  private async isTeamsGuest(principal: Principal, tenant: TenantRoles): Promise<boolean> {
    const differs = (tenant.default?.length ?? 0) > 0 || (tenant.guest?.length ?? 0) > 0 || Object.keys(tenant.groups ?? {}).length > 0;
    if (!differs) return false;
    const directory = this.directories.teams;
    if (!directory?.isGuest) {
      this.logger.warn("teams guest check unavailable, no host roles", { channel: "teams", reason: "not_connected" });
      return true;
    }
    try {
      return await directory.isGuest(principal);
    } catch (error) {
      // Our own errors' messages name a status and never an id; anything else is logged by its name alone.
      const detail = error instanceof RoleLookupError ? error.message : undefined;
      this.logger.warn("teams guest check failed, no host roles", { channel: "teams", reason: "lookup_failed", error: (error as Error)?.name, detail });
      return true;
    }
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
