import { z } from "zod";
import type { GroupDirectory } from "../../auth/channel-roles.js";
import type { Principal } from "../../auth/principal.js";
import { RoleLookupError } from "../../errors.js";
import { GroupMembershipCache } from "../group-membership-cache.js";
import { BotConnectorTokenProvider, DEFAULT_TOKEN_TIMEOUT_MS } from "./bot-connector-token-provider.js";

/** Microsoft Graph v1.0; the trailing slash matters to relative paths. */
export const DEFAULT_GRAPH_URL = "https://graph.microsoft.com/v1.0/";
/** Application permissions granted to the bot's app registration, by admin consent. */
export const DEFAULT_GRAPH_SCOPE = "https://graph.microsoft.com/.default";
/** Graph's limit of groups per `checkMemberGroups` request. */
export const GRAPH_MAX_GROUPS_PER_CHECK = 20;

const ENTRA_OBJECT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const checkMemberGroupsResponse = z.object({ value: z.array(z.string()) });
/** Entra's `userType`: "Member" or "Guest"; older accounts may have none. */
const userTypeResponse = z.object({ userType: z.string().nullable().optional() });
/** The only `userType` that makes a user a member of the tenant; anything else (Guest, none, a value Graph adds later) is a guest. */
export const ENTRA_MEMBER_USER_TYPE = "Member";

export interface EntraGroupDirectoryOptions {
  /**
   * The bot's Microsoft App ID and client secret; the app needs `GroupMember.Read.All` for groups and
   * `User.Read.All` for the guest check (application permissions: `userType` is not in the basic profile).
   */
  appId: string;
  appPassword: string;
  /** Client-credentials token URL; `{tenant}` is replaced by the user's tenant. Default: Entra's. */
  tokenUrl?: string;
  /** Default: {@link DEFAULT_GRAPH_URL}. */
  graphUrl?: string;
  /** How long a user's groups and user type are reused. Default: 5 minutes (`DEFAULT_GROUP_CACHE_MS`). */
  cacheMs?: number;
  /** Default: `DEFAULT_TOKEN_TIMEOUT_MS`. */
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Entra group memberships, for `TEAMS_ROLES`' `groups`: Microsoft Graph's `checkMemberGroups`
 * (transitive) for the configured groups, with a token of the user's own tenant, each user's
 * answer reused for a while. A Teams user without an Entra object id is in no group. And whether
 * a user is the tenant's guest, for `TEAMS_ROLES`' `guest`: Graph's `userType`, reused as long.
 */
export class EntraGroupDirectory implements GroupDirectory {
  private readonly tokens = new Map<string, BotConnectorTokenProvider>();
  private readonly memberships: GroupMembershipCache<string[]>;
  private readonly guests: GroupMembershipCache<boolean>;
  private readonly graphUrl: string;

  constructor(private readonly options: EntraGroupDirectoryOptions) {
    this.graphUrl = options.graphUrl ?? DEFAULT_GRAPH_URL;
    this.memberships = new GroupMembershipCache(options.cacheMs, undefined, options.now);
    this.guests = new GroupMembershipCache(options.cacheMs, undefined, options.now);
  }

  /**
   * Whether the tenant's directory calls the user a guest (`GET /users/{id}?$select=userType` is not
   * "Member"): at most one request per user per `cacheMs`, shared by concurrent turns. Throws
   * `RoleLookupError` when Graph does not answer it (no `User.Read.All`, an unknown user, a timeout);
   * a failure is not reused.
   */
  async isGuest(principal: Principal): Promise<boolean> {
    if (principal.tenant === null || !ENTRA_OBJECT_ID.test(principal.subject)) throw new RoleLookupError("not an entra user of a tenant", "teams");
    const key = JSON.stringify([principal.tenant, principal.subject]);
    return this.guests.get(key, () => this.readUserType(principal.tenant as string, principal.subject));
  }

  async memberOf(principal: Principal, groupIds: readonly string[]): Promise<string[]> {
    if (principal.tenant === null || !ENTRA_OBJECT_ID.test(principal.subject)) return [];
    const key = JSON.stringify([principal.tenant, principal.subject, groupIds]);
    return this.memberships.get(key, () => this.check(principal.tenant as string, principal.subject, groupIds));
  }

  private async check(tenant: string, objectId: string, groupIds: readonly string[]): Promise<string[]> {
    const token = await this.tokenProvider(tenant).token();
    const found: string[] = [];
    for (let i = 0; i < groupIds.length; i += GRAPH_MAX_GROUPS_PER_CHECK) {
      const response = await fetch(new URL(`users/${encodeURIComponent(objectId)}/checkMemberGroups`, this.graphUrl), {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ groupIds: groupIds.slice(i, i + GRAPH_MAX_GROUPS_PER_CHECK) }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TOKEN_TIMEOUT_MS),
      });
      if (!response.ok) throw new RoleLookupError(`microsoft graph answered ${response.status} to checkMemberGroups`, "teams");
      const parsed = checkMemberGroupsResponse.safeParse(await response.json().catch(() => undefined));
      if (!parsed.success) throw new RoleLookupError("microsoft graph's checkMemberGroups answer is unreadable", "teams");
      found.push(...parsed.data.value);
    }
    return found;
  }

  private async readUserType(tenant: string, objectId: string): Promise<boolean> {
    const token = await this.tokenProvider(tenant).token();
    const response = await fetch(new URL(`users/${encodeURIComponent(objectId)}?$select=userType`, this.graphUrl), {
      headers: { authorization: `Bearer ${token}`, accept: "application/json" },
      signal: AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TOKEN_TIMEOUT_MS),
    }).catch((error: unknown) => {
      throw new RoleLookupError("microsoft graph could not be reached for a user's userType", "teams", { cause: error });
    });
    if (!response.ok) throw new RoleLookupError(`microsoft graph answered ${response.status} to a user's userType`, "teams");
    const parsed = userTypeResponse.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) throw new RoleLookupError("microsoft graph's userType answer is unreadable", "teams");
    return parsed.data.userType !== ENTRA_MEMBER_USER_TYPE;
  }

  /** Graph tokens are per tenant: the user's, where the app has admin consent. Bounded by the configured tenants. */
  private tokenProvider(tenant: string): BotConnectorTokenProvider {
    let provider = this.tokens.get(tenant);
    if (!provider) {
      provider = new BotConnectorTokenProvider({
        appId: this.options.appId,
        appPassword: this.options.appPassword,
        tenant,
        tokenUrl: this.options.tokenUrl,
        scope: DEFAULT_GRAPH_SCOPE,
        timeoutMs: this.options.timeoutMs,
      });
      this.tokens.set(tenant, provider);
    }
    return provider;
  }
}
