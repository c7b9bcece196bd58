import { z } from "zod";
import { ValidationError } from "../errors.js";
import { issueDetails, parseJsonSetting, parseOrThrow } from "../validation.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** Audience expected in API JWTs. */
export const DEFAULT_JWT_AUDIENCE = "threadwise";
/** Issuer of locally minted JWTs. */
export const DEFAULT_LOCAL_ISSUER = "threadwise-local";

const roleList = z.array(z.string().min(1));
/** Roles of the principals of one Slack workspace or Teams tenant (`SLACK_ROLES`, `TEAMS_ROLES`). */
const tenantRolesSchema = z.strictObject({
  /** Every principal of the tenant. */
  default: roleList.optional(),
  /** By user: a Slack user id (`U…`, `W…`), an Entra object id. */
  users: z.record(z.string().min(1), roleList).optional(),
  /** By group the user is a member of: a Slack user group id (`S…`), an Entra group object id. Looked up when a turn runs. */
  groups: z.record(z.string().min(1), roleList).optional(),
});
/** Keyed by Slack team id or Entra tenant id; a workspace or tenant not listed has no roles. */
const channelRolesSchema = z.record(z.string().min(1), tenantRolesSchema);
/**
 * A Teams tenant's entry also names its guests' roles: `guest`, for users its directory calls guests
 * (Entra `userType` "Guest", B2B users of other organisations), who get it instead of `default` and
 * `groups` (see docs/security.md). Slack has no such key: a Slack Connect guest is a user of their own team.
 */
const teamsTenantRolesSchema = tenantRolesSchema.extend({ guest: roleList.optional() });
const teamsRolesSchema = z.record(z.string().min(1), teamsTenantRolesSchema);

export type TenantRoles = z.infer<typeof teamsTenantRolesSchema>;
export type ChannelRolesMap = z.infer<typeof teamsRolesSchema>;

/** `SLACK_ROLES` or `TEAMS_ROLES` (named by `name` in its error, which picks the schema: only Teams has `guest`), validated; unset is no roles. */
export function parseChannelRoles(raw: string | undefined, name: string): ChannelRolesMap {
  if (raw === undefined) return {};
  const teams = name === "TEAMS_ROLES";
  const parsed = (teams ? teamsRolesSchema : channelRolesSchema).safeParse(parseJsonSetting(raw, name));
  if (!parsed.success) {
    const [first] = issueDetails(parsed.error);
    const guestKey = teams ? ', "guest": [..]' : "";
    throw new ValidationError("invalid configuration", [
      {
        path: [name, first?.path].filter(Boolean).join("."),
        message: `${first?.message}; expected {"<tenant>": {"default": [..], "users": {"<id>": [..]}, "groups": {"<id>": [..]}${guestKey}}}`,
      },
    ]);
  }
  return parsed.data;
}

/** The settings of who may call: API tokens and the channels' roles, defined once (see `settings.ts`). */
export const AUTH_SETTINGS = {
  JWT_ISSUER: setting({ schema: z.string().min(1), defaultText: "local keys", description: "who signs API tokens" }),
  JWT_AUDIENCE: setting({ schema: z.string().min(1), default: DEFAULT_JWT_AUDIENCE, description: "audience of API tokens" }),
  JWT_JWKS_URL: setting({ schema: z.string().url(), defaultText: "local keys", description: "the keys that sign API tokens" }),
  JWT_TENANT_CLAIM: setting({ schema: z.string().min(1), default: "tenant", description: "claim naming the caller's tenant" }),
  JWT_REQUIRE_TENANT: setting({
    schema: z.enum(["true", "false"]),
    default: "false",
    defaultText: "`false`; `true` in a stack whose Cognito pool issues the tokens",
    description:
      "refuse (401) an API token without the tenant claim, so every API caller is inside a tenant's limits and admin " +
      "(a Cognito access token carries no tenant)",
  }),
  JWT_ROLES_CLAIM: setting({ schema: z.string().min(1), default: "roles", description: "claim naming the caller's roles" }),
  SLACK_ROLES: setting({
    schema: z.string().min(1),
    defaultText: "unset (Slack users have no roles)",
    description:
      'JSON roles of Slack users by workspace: `{"T0123": {"default": ["viewer"], "users": {"U0ALICE": ' +
      '["analyst"]}, "groups": {"S0FIN": ["analyst"]}}}` (see [Security](how-it-works.md#security))',
  }),
  TEAMS_ROLES: setting({
    schema: z.string().min(1),
    defaultText: "unset (Teams users have no roles)",
    description:
      "the same by Entra tenant id, with Entra object ids under `users` and Entra group ids under `groups`; `guest` names the roles of the " +
      "tenant's guests (Entra `userType` Guest), who get none of `default` and `groups` " +
      "([security.md](security.md#teams-guests-from-other-organisations))",
  }),
};

const envSchema = envSchemaOf(AUTH_SETTINGS);

export interface AuthConfig {
  /** Unset in local mode: the local server signs and verifies with its own key pair. */
  issuer?: string;
  audience: string;
  jwksUrl?: string;
  tenantClaim: string;
  rolesClaim: string;
  /** `JWT_REQUIRE_TENANT`: a token without the tenant claim is refused. Default: false. */
  requireTenant: boolean;
  /** Roles of Slack and Teams users, by workspace or tenant (API callers' roles come from their tokens). */
  channelRoles: { slack: ChannelRolesMap; teams: ChannelRolesMap };
}

export function loadAuthConfig(env: Record<string, string | undefined>): AuthConfig {
  const e = withDefaults(AUTH_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return {
    issuer: e.JWT_ISSUER,
    audience: e.JWT_AUDIENCE,
    jwksUrl: e.JWT_JWKS_URL,
    tenantClaim: e.JWT_TENANT_CLAIM,
    rolesClaim: e.JWT_ROLES_CLAIM,
    requireTenant: e.JWT_REQUIRE_TENANT === "true",
    channelRoles: { slack: parseChannelRoles(e.SLACK_ROLES, "SLACK_ROLES"), teams: parseChannelRoles(e.TEAMS_ROLES, "TEAMS_ROLES") },
  };
}
