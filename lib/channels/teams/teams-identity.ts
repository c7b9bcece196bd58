import { z } from "zod";
import { teamsPrincipal, type Principal } from "../../auth/principal.js";

/** The only Bot Framework channel this route takes: Web Chat, Direct Line and the rest name their users themselves. */
export const TEAMS_CHANNEL_ID = "msteams";

/**
 * Hosts of the Bot Connector service Teams names as an activity's `serviceUrl`: the commercial
 * cloud's (`https://smba.trafficmanager.net/{region}/`) and the government clouds' (GCC, GCC High, DoD).
 */
export const DEFAULT_TEAMS_SERVICE_HOSTS: readonly string[] = [
  "smba.trafficmanager.net",
  "smba.infra.gcc.teams.microsoft.com",
  "smba.infra.gov.teams.microsoft.us",
  "smba.infra.dod.teams.microsoft.us",
];

/**
 * Whether `serviceUrl` is a Teams Bot Connector: an `https` URL on one of
 * {@link DEFAULT_TEAMS_SERVICE_HOSTS}, or, where a stand-in serves the connector (tests, local
 * tries: `TEAMS_SERVICE_URL_ORIGIN`), on `standInOrigin` alone.
 */
export function isTeamsServiceUrl(serviceUrl: string, standInOrigin?: string): boolean {
  let url: URL;
  try {
    url = new URL(serviceUrl);
  } catch {
    return false;
  }
  if (standInOrigin !== undefined) return url.origin === new URL(standInOrigin).origin;
  return url.protocol === "https:" && url.port === "" && url.username === "" && DEFAULT_TEAMS_SERVICE_HOSTS.includes(url.hostname);
}

/** Why an activity names nobody we can trust. */
export const TEAMS_IDENTITY_REFUSALS = {
  /** No Entra object id: a bot, an anonymous meeting guest, or an activity not from Teams. */
  noObjectId: "no_object_id",
  /** No `channelData.tenant.id`. */
  noTenant: "no_tenant",
  /** `conversation.tenantId` names another tenant than `channelData.tenant.id`: a user of another organisation (a shared channel). */
  otherTenant: "other_tenant",
} as const;
export type TeamsIdentityRefusal = (typeof TEAMS_IDENTITY_REFUSALS)[keyof typeof TEAMS_IDENTITY_REFUSALS];

/** Who an activity is from: a Teams principal of its tenant, or why nobody. */
export type TeamsIdentity = { kind: "user"; principal: Principal & { issuer: "teams"; tenant: string } } | { kind: "refused"; reason: TeamsIdentityRefusal };

/** Entra ids are GUIDs; anything outside this shape (blanks, separators) is refused rather than normalized into someone else. */
const id = z.string().regex(/^[0-9A-Za-z][0-9A-Za-z-]{0,99}$/);
const identityFieldsSchema = z.object({
  from: z.object({ aadObjectId: z.unknown().optional() }).loose(),
  conversation: z.object({ tenantId: z.unknown().optional() }).loose().optional(),
  channelData: z
    .object({ tenant: z.object({ id: z.unknown().optional() }).loose().optional() })
    .loose()
    .optional(),
});

/**
 * The sender of a verified Teams activity, from what Teams guarantees and nothing else: the
 * subject is the Entra object id (`from.aadObjectId`), never the channel account id (`from.id`,
 * which other Bot Framework channels let a client choose); the tenant is `channelData.tenant.id`.
 * An activity without either, or whose conversation belongs to another tenant, is refused. Pure
 * and total: every body gives exactly one principal or one refusal.
 */
export function teamsIdentityOf(body: unknown): TeamsIdentity {
  const parsed = identityFieldsSchema.safeParse(body);
  if (!parsed.success) return { kind: "refused", reason: TEAMS_IDENTITY_REFUSALS.noObjectId };
  const subject = id.safeParse(parsed.data.from.aadObjectId);
  if (!subject.success) return { kind: "refused", reason: TEAMS_IDENTITY_REFUSALS.noObjectId };
  const tenant = id.safeParse(parsed.data.channelData?.tenant?.id);
  if (!tenant.success) return { kind: "refused", reason: TEAMS_IDENTITY_REFUSALS.noTenant };
  const conversationTenant = parsed.data.conversation?.tenantId;
  if (conversationTenant !== undefined && conversationTenant !== tenant.data) return { kind: "refused", reason: TEAMS_IDENTITY_REFUSALS.otherTenant };
  return { kind: "user", principal: { ...teamsPrincipal(tenant.data, subject.data), tenant: tenant.data } };
}
