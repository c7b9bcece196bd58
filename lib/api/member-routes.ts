import type { AuditLog } from "../audit/audit-log.js";
import type { AdminRoles } from "../auth/admin-scope.js";
import { assertMayBeMember, mayAccess, relationTo } from "../auth/conversation-access.js";
import { apiPrincipal, type Caller, type Principal } from "../auth/principal.js";
import { ForbiddenError } from "../errors.js";
import { ConversationMembers, type MembersChange } from "../store/conversation-members.js";
import type { ConversationDocument, ConversationMember, ConversationStore } from "../store/conversation-store.js";
import { json, noContent, type Authenticate, type HttpRequest } from "./http.js";
import { actorOf, requestIdOf } from "./lifecycle-routes.js";
import { addMemberBody } from "./member-schemas.js";
import { parseId, parseJsonBody } from "./request-parsing.js";
import type { Route } from "./router.js";

export interface MemberRoutesDeps {
  authenticate: Authenticate;
  conversations: ConversationStore;
  /** The operator and tenant-admin roles: a tenant admin manages the members of its tenant's conversations (`lib/auth/admin-scope.ts`). */
  roles: AdminRoles;
  /** Records each change with the member lists before and after (docs/data-lifecycle.md). Default: none. */
  audit?: AuditLog;
}

const principalOf = (p: Principal) => ({ issuer: p.issuer, tenant: p.tenant, subject: p.subject });

function memberView(m: ConversationMember) {
  return { ...principalOf(m), addedAt: m.addedAt.toISOString(), addedBy: principalOf(m.addedBy) };
}

function memberList(conversation: ConversationDocument) {
  const { owner } = conversation;
  return {
    conversationId: conversation._id,
    owner: { issuer: owner.issuer, tenant: owner.tenant, subject: owner.subject ?? "" },
    members: (conversation.members ?? []).map(memberView),
  };
}

/**
 * An API conversation's members (docs/api.md, "Members"): its owner or a tenant admin of its tenant
 * adds and removes API users of the same tenant; a member reads the conversation and sends turns as
 * itself, and may leave. Everyone else gets the answer for a conversation that is not there (404);
 * a member who tries to add or remove another is 403. Each change is an audit record with the
 * member lists before and after.
 */
export function memberRoutes(deps: MemberRoutesDeps): Route[] {
  const { conversations, roles } = deps;
  const members = new ConversationMembers(conversations);
  const path = /^\/v1\/conversations\/([^/]+)\/members$/;

  const record = async (
    request: HttpRequest,
    caller: Caller,
    change: MembersChange,
    action: "conversation.member.add" | "conversation.member.remove",
    member: Principal,
  ) => {
    if (!change.changed) return;
    const { owner } = change.conversation;
    await deps.audit?.append({
      action,
      actor: actorOf(caller),
      tenant: { issuer: owner.issuer, tenant: owner.tenant },
      resource: { conversationId: change.conversation._id, memberSubject: member.subject },
      channel: "api",
      requestId: requestIdOf(request),
      before: { members: change.before.map(principalOf) },
      after: { members: change.after.map(principalOf) },
    });
  };

  return [
    {
      method: "GET",
      pattern: path,
      handler: async (request, [rawId]) => {
        const caller = await deps.authenticate(request);
        const conversation = await conversations.getFor(parseId(rawId, "conversationId"), caller, "members", { adminRoles: roles });
        return json(200, memberList(conversation));
      },
    },
    {
      method: "POST",
      pattern: path,
      handler: async (request, [rawId]) => {
        const caller = await deps.authenticate(request);
        const conversation = await conversations.getFor(parseId(rawId, "conversationId"), caller, "manage", { adminRoles: roles });
        const body = parseJsonBody(request, addMemberBody);
        const member = apiPrincipal(body.subject, body.tenant === undefined ? conversation.owner.tenant : body.tenant);
        assertMayBeMember(conversation, member);
        const change = await members.addMember(conversation._id, member, caller.principal);
        await record(request, caller, change, "conversation.member.add", member);
        return json(change.changed ? 201 : 200, memberList(change.conversation));
      },
    },
    {
      method: "DELETE",
      pattern: /^\/v1\/conversations\/([^/]+)\/members\/([^/]+)$/,
      handler: async (request, [rawId, subject]) => {
        const caller = await deps.authenticate(request);
        const id = parseId(rawId, "conversationId");
        const seen = await conversations.getFor(id, caller, "members", { adminRoles: roles });
        const member = apiPrincipal(subject, seen.owner.tenant);
        // A member may leave; removing anyone else takes the owner or a tenant admin (403 for a member, and nothing changes).
        const leaving = relationTo(seen, caller) === "member" && caller.principal.subject === subject;
        if (!leaving && !mayAccess(seen, caller, "manage", { adminRoles: roles })) {
          throw new ForbiddenError(`a member of conversation ${id} may leave it; removing another member takes its owner or a tenant admin`);
        }
        const change = await members.removeMember(id, member);
        await record(request, caller, change, "conversation.member.remove", member);
        return noContent();
      },
    },
  ];
}
