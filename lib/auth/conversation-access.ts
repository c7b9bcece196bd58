import { ForbiddenError, MemberOutsideTenantError, NotFoundError } from "../errors.js";
import { adminAuthorityOf, authorityCovers, type AdminRoles } from "./admin-scope.js";
import type { Caller, Owner, Principal } from "./principal.js";

/**
 * The one ownership check (docs/security.md, "Who may reach a conversation"): every entry that
 * reads, writes or manages a conversation asks it (the `/v1` routes, the Agent Protocol, the MCP
 * `ask`, the runner, channel decisions), so none decides on its own.
 *
 * - `read`: its record, state, archive, turns, inspector, approvals and event streams.
 * - `write`: send a turn (also edit, regenerate, a run), decide an approval, set thread metadata.
 * - `members`: list its members.
 * - `manage`: add and remove its members.
 * - `delete`: delete the conversation.
 * - `erase`: erase it through the admin API (`DELETE /v1/admin/conversations/{id}`): a tenant admin
 *   of its tenant, or an operator, whatever else the caller is.
 */
export const CONVERSATION_NEEDS = ["read", "write", "members", "manage", "delete", "erase"] as const;
export type ConversationNeed = (typeof CONVERSATION_NEEDS)[number];

/**
 * How a caller stands to a conversation:
 * - `owner`: the API principal that created it (issuer, tenant and subject all equal);
 * - `member`: an API principal its owner or a tenant admin added (same issuer and tenant);
 * - `channel`: a Slack or Teams user of the workspace or tenant that owns a channel thread;
 * - `admin`: a tenant admin of the owner's tenant (or an operator) who is none of the above.
 */
export type ConversationRelation = "owner" | "member" | "channel" | "admin";

/** Which relations each need admits; a caller of another relation is refused. */
const ADMITS: Record<ConversationNeed, readonly ConversationRelation[]> = {
  read: ["owner", "member", "channel"],
  write: ["owner", "member", "channel"],
  members: ["owner", "member", "admin"],
  manage: ["owner", "admin"],
  delete: ["owner"],
  erase: ["admin"],
};

/** What else the check may weigh besides the caller. */
export interface AccessOptions {
  /** The deployment's admin roles: given where a tenant admin may act (members, erasure). Default: no admin relation. */
  adminRoles?: AdminRoles;
  /**
   * The workspace or tenant a signed channel request came through (a Slack event's team, a Bot
   * Framework activity's tenant): its threads' users, a Slack Connect guest of another team
   * included, continue them, as the channel's membership decides. Default: none (API requests).
   */
  channel?: Owner;
}

/** What the check reads of a conversation: its owner and its members. */
export interface AccessedConversation {
  _id: string;
  owner: Owner;
  members?: readonly Principal[];
}

const samePrincipal = (a: Principal | Owner, b: Principal | Owner) => a.issuer === b.issuer && a.tenant === b.tenant && a.subject === b.subject;

/**
 * The caller's relation to the conversation, or undefined when it has none. `admin` is only looked
 * for when the deployment's admin roles are given (the routes that manage members pass them).
 */
export function relationTo(conversation: AccessedConversation, caller: Caller, options: AccessOptions = {}): ConversationRelation | undefined {
  const { owner } = conversation;
  const { principal } = caller;
  if (samePrincipal(owner, principal)) return "owner";
  if (conversation.members?.some((m) => samePrincipal(m, principal))) return "member";
  if (owner.subject === null && owner.tenant !== null && owner.issuer !== "api" && principal.issuer === owner.issuer) {
    // A user of the owning workspace or tenant, or one its signed channel request vouches for (a Slack Connect guest).
    if (principal.tenant === owner.tenant || (options.channel !== undefined && samePrincipal(options.channel, owner))) return "channel";
  }
  if (options.adminRoles && isAdminOf(caller, options.adminRoles, owner)) return "admin";
  return undefined;
}

function isAdminOf(caller: Caller, roles: AdminRoles, owner: Owner): boolean {
  try {
    return authorityCovers(adminAuthorityOf(caller, roles), { issuer: owner.issuer, tenant: owner.tenant });
  } catch {
    return false;
  }
}

/** Whether the caller may do what `need` names on the conversation. */
export function mayAccess(conversation: AccessedConversation, caller: Caller, need: ConversationNeed, options: AccessOptions = {}): boolean {
  const relation = admittedRelation(conversation, caller, need, options);
  return relation !== undefined && ADMITS[need].includes(relation);
}

/**
 * The caller's relation, or `admin` where the need admits admins and the caller is one as well as
 * something the need does not admit (an admin who is a member of the conversation erases it as admin).
 */
function admittedRelation(
  conversation: AccessedConversation,
  caller: Caller,
  need: ConversationNeed,
  options: AccessOptions,
): ConversationRelation | undefined {
  const relation = relationTo(conversation, caller, options);
  if (relation !== undefined && relation !== "admin" && !ADMITS[need].includes(relation) && ADMITS[need].includes("admin")) {
    if (options.adminRoles && isAdminOf(caller, options.adminRoles, conversation.owner)) return "admin";
  }
  return relation;
}

/**
 * The conversation when the caller may do what `need` names; otherwise, before anything is read
 * or changed:
 * - `NotFoundError` (404) when the conversation is not there or the caller may not see it (no
 *   relation, or a tenant admin asking for anything but its members): the answer is the same as
 *   for an id that does not exist, so it says nothing of whose it is;
 * - `ForbiddenError` (403) when the caller may read it but not this (a member managing members or
 *   deleting it), naming who may.
 */
export function requireAccess<T extends AccessedConversation>(
  conversation: T | null | undefined,
  conversationId: string,
  caller: Caller,
  need: ConversationNeed,
  options: AccessOptions = {},
): T {
  const relation = conversation ? admittedRelation(conversation, caller, need, options) : undefined;
  // Not seen: no relation, an admin asking what admins may not, or anyone but an admin asking to erase (the admin API's own answer).
  const unseen = relation === undefined || (relation === "admin" && !ADMITS[need].includes("admin")) || (need === "erase" && relation !== "admin");
  if (!conversation || unseen) {
    throw new NotFoundError(`conversation ${conversationId} not found`);
  }
  if (!ADMITS[need].includes(relation)) {
    const who = need === "delete" ? "its owner" : "its owner or a tenant admin";
    const as = relation === "channel" ? "user of the channel" : relation;
    throw new ForbiddenError(`a ${as} of conversation ${conversationId} may read it and send turns; to ${need} it takes ${who}`);
  }
  return conversation;
}

/**
 * Refuses (`MemberOutsideTenantError`, 422) a member the conversation cannot have: members are API
 * principals of the owner's own issuer and tenant, so sharing never crosses a tenant; a
 * conversation whose owner names no tenant has no tenant to share within, and its owner is not a
 * member of it.
 */
export function assertMayBeMember(conversation: AccessedConversation, member: Principal): void {
  const { owner } = conversation;
  if (owner.issuer !== "api" || owner.subject === null) {
    throw new MemberOutsideTenantError(`conversation ${conversation._id} is a channel thread: its members are its channel's`);
  }
  if (owner.tenant === null) {
    throw new MemberOutsideTenantError(`conversation ${conversation._id} belongs to a token that names no tenant: it has no tenant to share within`);
  }
  if (member.issuer !== owner.issuer || member.tenant !== owner.tenant) {
    const theirs = `${member.issuer}/${member.tenant ?? "(no tenant)"}`;
    throw new MemberOutsideTenantError(
      `a member of conversation ${conversation._id} is a user of its own tenant (${owner.issuer}/${owner.tenant}), not of ${theirs}`,
    );
  }
  if (samePrincipal(owner, member))
    throw new MemberOutsideTenantError(`${member.subject} owns conversation ${conversation._id}: an owner is not added as a member`);
}
