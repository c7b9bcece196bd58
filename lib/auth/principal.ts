import { z } from "zod";

/** Who vouches for an identity: an API token's issuer, Slack's request signature, the Bot Framework's token. */
export const ISSUER_KINDS = ["api", "slack", "teams"] as const;
export type IssuerKind = (typeof ISSUER_KINDS)[number];
/** The channels whose tenants can own a conversation as a whole. */
export type ChannelIssuerKind = Exclude<IssuerKind, "api">;

/**
 * A person, as (issuer kind, tenant, subject). The issuer kind is set by the verifier that accepted
 * the credential, never read from it, so an API token names an API principal whatever its `sub`
 * says (`slack:T0…` included), and a Slack or Teams user is never an API subject.
 */
export interface Principal {
  issuer: IssuerKind;
  /** API: the token's tenant claim; Slack: the workspace (team id); Teams: the Entra tenant id. Null when there is none. */
  tenant: string | null;
  /** API: the token's subject; Slack: the user id; Teams: the Entra object id, or the channel account id without one. */
  subject: string;
}

/**
 * Who owns a conversation or an artifact: one principal, or (subject null) a whole channel tenant,
 * a Slack workspace or a Teams tenant, whose members reach it through the channel.
 */
export interface Owner {
  issuer: IssuerKind;
  tenant: string | null;
  subject: string | null;
}

/** Who is asking: a principal and its roles, which tool permissions are checked against. */
export interface Caller {
  principal: Principal;
  roles: string[];
}

export const principalSchema = z.strictObject({
  issuer: z.enum(ISSUER_KINDS),
  tenant: z.string().min(1).nullable(),
  subject: z.string().min(1),
});

export const ownerSchema = z
  .strictObject({ issuer: z.enum(ISSUER_KINDS), tenant: z.string().min(1).nullable(), subject: z.string().min(1).nullable() })
  .refine((owner) => owner.subject !== null || (owner.issuer !== "api" && owner.tenant !== null), {
    message: "only a channel tenant owns without a subject",
  });

export const callerSchema = z.strictObject({ principal: principalSchema, roles: z.array(z.string()) });

/** The principal of a verified API token. */
export function apiPrincipal(subject: string, tenant: string | null = null): Principal & { issuer: "api" } {
  return { issuer: "api", tenant, subject };
}

/** A Slack user of a workspace, from a signed event. */
export function slackPrincipal(teamId: string, userId: string): Principal & { issuer: "slack" } {
  return { issuer: "slack", tenant: teamId, subject: userId };
}

/** A Teams user, from a Bot Framework activity: the Entra tenant when Teams names one. */
export function teamsPrincipal(tenantId: string | null, userKey: string): Principal & { issuer: "teams" } {
  return { issuer: "teams", tenant: tenantId, subject: userKey };
}

/** A Slack workspace or a Teams tenant as a whole, owner of its channel conversations. */
export function tenantOwner(issuer: ChannelIssuerKind, tenant: string): Owner {
  return { issuer, tenant, subject: null };
}

/** One string per owner, distinct for distinct owners: for hashed keys and scopes. */
export function ownerKey(owner: Owner): string {
  return JSON.stringify([owner.issuer, owner.tenant, owner.subject]);
}
