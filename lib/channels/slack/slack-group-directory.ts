import type { WebClient } from "@slack/web-api";
import type { GroupDirectory } from "../../auth/channel-roles.js";
import type { Principal } from "../../auth/principal.js";
import { GroupMembershipCache } from "../group-membership-cache.js";

/**
 * Slack user group memberships, for `SLACK_ROLES`' `groups`: `usergroups.users.list` per
 * configured group (the bot needs the `usergroups:read` scope), each group's members reused for
 * a while. Only groups named in configuration are read, so the cache is bounded by it.
 */
export class SlackGroupDirectory implements GroupDirectory {
  private readonly members: GroupMembershipCache<Set<string>>;

  constructor(
    private readonly client: WebClient,
    options: { cacheMs?: number; now?: () => number } = {},
  ) {
    this.members = new GroupMembershipCache(options.cacheMs, undefined, options.now);
  }

  async memberOf(principal: Principal, groupIds: readonly string[]): Promise<string[]> {
    const team = principal.tenant ?? "";
    const found: string[] = [];
    for (const group of groupIds) {
      const users = await this.members.get(JSON.stringify([team, group]), () => this.usersOf(team, group));
      if (users.has(principal.subject)) found.push(group);
    }
    return found;
  }

  private async usersOf(team: string, usergroup: string): Promise<Set<string>> {
    const result = await this.client.usergroups.users.list({ usergroup, ...(team ? { team_id: team } : {}) });
    return new Set(result.users ?? []);
  }
}
