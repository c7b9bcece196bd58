import { randomUUID } from "node:crypto";
import type { AuditActor, AuditEntry, AuditLog, AuditRecord } from "../audit/audit-log.js";
import type { Caller } from "../auth/principal.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { DataTarget, TenantTarget, UserTarget } from "../lifecycle/data-subject.js";
import type { Eraser, ErasureJob } from "../lifecycle/eraser.js";
import { exportData, ManifestBuilder } from "../lifecycle/exporter.js";
import type { ThreadwiseDatabase } from "../store/database.js";
import { adminAuthorityOf, authorizeAdmin, type AdminRoles } from "../auth/admin-scope.js";
import { requireAccess } from "../auth/conversation-access.js";
import type { IssuerKind } from "../auth/principal.js";
import { json, type Authenticate, type HttpRequest, type HttpResponse } from "./http.js";
import { auditQuery, erasureBody, exportQuery, tenantQuery, userQuery } from "./lifecycle-schemas.js";
import { parseId, parseJsonBody, parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";

export interface LifecycleRoutesDeps extends AdminRoles {
  authenticate: Authenticate;
  database: ThreadwiseDatabase;
  eraser: Eraser;
  audit: AuditLog;
}

/** Audit records one page shows when the request names no `limit`. */
export const DEFAULT_AUDIT_PAGE = 100;

/** Who made a request, as audit records and receipts name them. */
export const actorOf = (caller: Caller): AuditActor => ({ ...caller.principal });
/** The request's id, when its adapter or client gave one (`x-request-id`); else one made here, so the record and the log line share it. */
export const requestIdOf = (request: HttpRequest): string => request.headers["x-request-id"] ?? randomUUID();

/** The audit entry of a read of a conversation's record, state, archive or inspector: who, which conversation, from which request. */
export function conversationReadEntry(
  action: "conversation.read" | "conversation.state.read" | "conversation.archive.read" | "conversation.inspect",
  caller: Caller,
  conversation: { _id: string; owner: { issuer: string; tenant: string | null } },
  request: HttpRequest,
  resource: Record<string, string> = {},
): AuditEntry {
  return {
    action,
    actor: actorOf(caller),
    tenant: { issuer: conversation.owner.issuer, tenant: conversation.owner.tenant },
    resource: { conversationId: conversation._id, ...resource },
    channel: "api",
    requestId: requestIdOf(request),
  };
}

export function erasureView(job: ErasureJob) {
  return {
    erasureId: job._id,
    status: job.status,
    target: job.target,
    startedAt: job.startedAt.toISOString(),
    completedAt: job.completedAt?.toISOString() ?? null,
    receipt: job.receipt ?? null,
  };
}

export function auditRecordView(r: AuditRecord) {
  const { _id, chain, expiresAt, at, ...rest } = r;
  return { ...rest, at: at.toISOString() };
}

/**
 * Erasure, export and the audit log in the admin API (docs/data-lifecycle.md): a tenant admin for
 * their own tenant, an operator for any (`lib/auth/admin-scope.ts`); anyone else 403, and nothing is
 * read, erased or recorded.
 */
export function lifecycleRoutes(deps: LifecycleRoutesDeps): Route[] {
  const { eraser, audit } = deps;

  /** The tenant whose admin may act on the target; a conversation's is its owner's (404 when it is not there). */
  const tenantOfTarget = async (target: DataTarget): Promise<{ issuer: string; tenant: string | null }> => {
    if (target.kind !== "conversation") return { issuer: target.issuer, tenant: target.tenant };
    const doc = await deps.database.conversations.get(target.conversationId);
    if (doc) return { issuer: doc.owner.issuer, tenant: doc.owner.tenant };
    const running = await eraser.jobs.findOne({ "target.conversationId": target.conversationId, status: "running" });
    if (running?.owner) return running.owner;
    throw new NotFoundError(`conversation ${target.conversationId} not found`);
  };

  const erase = async (request: HttpRequest, caller: Caller, target: DataTarget): Promise<HttpResponse> => {
    if (target.kind === "conversation") {
      // The one check (lib/auth/conversation-access.ts): another tenant's conversation is not found, as the conversation API answers it.
      const doc = await deps.database.conversations.get(target.conversationId);
      if (doc) requireAccess(doc, target.conversationId, caller, "erase", { adminRoles: deps });
    }
    const tenant = await tenantOfTarget(target);
    // An erasure of it still running (the document is gone): its job's tenant decides; a user or tenant is named, so 403 says why.
    if (target.kind === "conversation" && !mayAdminister(caller, tenant, deps)) throw new NotFoundError(`conversation ${target.conversationId} not found`);
    assertMayAdminister(caller, tenant, deps);
    const receipt = await eraser.erase({ target, actor: actorOf(caller), channel: "api", requestId: requestIdOf(request) });
    return json(200, receipt);
  };

  const userTarget = (q: { issuer: UserTarget["issuer"]; tenant?: string; subject: string }): UserTarget => ({
    kind: "user",
    issuer: q.issuer,
    tenant: q.tenant ?? null,
    subject: q.subject,
  });

  return [
    {
      method: "POST",
      pattern: /^\/v1\/admin\/erasures$/,
      handler: async (request) => {
        const caller = await deps.authenticate(request);
        assertHasAnAdminRole(caller, deps);
        return erase(request, caller, parseJsonBody(request, erasureBody).target);
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/admin\/erasures\/([^/]+)$/,
      handler: async (request, [rawId]) => {
        const caller = await deps.authenticate(request);
        assertHasAnAdminRole(caller, deps);
        const job = await eraser.get(parseId(rawId, "erasureId"));
        if (!job) throw new NotFoundError(`erasure ${rawId} not found`);
        const tenant = job.target.kind === "conversation" ? (job.owner ?? { issuer: "unknown", tenant: null }) : job.target;
        if (!mayAdminister(caller, tenant, deps)) throw new NotFoundError(`erasure ${rawId} not found`);
        return json(200, erasureView(job));
      },
    },
    {
      method: "DELETE",
      pattern: /^\/v1\/admin\/users$/,
      handler: async (request) => {
        const caller = await deps.authenticate(request);
        assertHasAnAdminRole(caller, deps);
        return erase(request, caller, userTarget(parseQuery(request, userQuery)));
      },
    },
    {
      method: "DELETE",
      pattern: /^\/v1\/admin\/tenants$/,
      handler: async (request) => {
        const caller = await deps.authenticate(request);
        assertHasAnAdminRole(caller, deps);
        const q = parseQuery(request, tenantQuery);
        return erase(request, caller, { kind: "tenant", issuer: q.issuer, tenant: q.tenant });
      },
    },
    {
      method: "DELETE",
      pattern: /^\/v1\/admin\/conversations\/([^/]+)$/,
      handler: async (request, [rawId]) => {
        const caller = await deps.authenticate(request);
        assertHasAnAdminRole(caller, deps);
        return erase(request, caller, { kind: "conversation", conversationId: parseId(rawId, "conversationId") });
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/admin\/exports$/,
      handler: async (request) => {
        const caller = await deps.authenticate(request);
        assertHasAnAdminRole(caller, deps);
        const q = parseQuery(request, exportQuery);
        if (q.subject === undefined && q.tenant === undefined) {
          throw new ValidationError("name a tenant, a user, or both", [{ path: "tenant", message: "required without subject" }]);
        }
        const target: UserTarget | TenantTarget =
          q.subject === undefined ? { kind: "tenant", issuer: q.issuer, tenant: q.tenant as string } : userTarget({ ...q, subject: q.subject });
        assertMayAdminister(caller, { issuer: target.issuer, tenant: target.tenant }, deps);
        const requestId = requestIdOf(request);
        const lines = exportLines(deps, target);
        const finish = (manifestHash: string, counts: Record<string, number>) =>
          audit.append({
            action: "export",
            actor: actorOf(caller),
            tenant: { issuer: target.issuer, tenant: target.tenant },
            resource: { kind: target.kind, ...(target.kind === "user" && { subject: target.subject }) },
            channel: "api",
            requestId,
            detail: { manifestHash, counts },
          });
        const headers = { "content-type": "application/x-ndjson" };
        if (request.canStream) {
          return {
            status: 200,
            headers,
            body: "",
            async *stream() {
              yield* lines(finish);
            },
          };
        }
        let body = "";
        for await (const piece of lines(finish)) body += piece;
        return { status: 200, headers, body };
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/admin\/audit$/,
      handler: async (request) => {
        const caller = await deps.authenticate(request);
        assertHasAnAdminRole(caller, deps);
        const q = parseQuery(request, auditQuery);
        const tenant = { issuer: q.issuer, tenant: q.tenant ?? null };
        assertMayAdminister(caller, tenant, deps);
        const limit = q.limit ?? DEFAULT_AUDIT_PAGE;
        const records = await audit.list(tenant, { afterSeq: q.after, limit });
        const last = records.at(-1);
        return json(200, { tenant, records: records.map(auditRecordView), nextAfter: records.length === limit && last ? last.seq : null });
      },
    },
  ];
}

/** Who may administer a tenant: the one decision of the admin API (`lib/auth/admin-scope.ts`); 403 outside it. */
function assertMayAdminister(caller: Caller, tenant: { issuer: string; tenant: string | null }, roles: AdminRoles): void {
  authorizeAdmin(caller, roles, { issuer: tenant.issuer as IssuerKind, tenant: tenant.tenant });
}

function mayAdminister(caller: Caller, tenant: { issuer: string; tenant: string | null }, roles: AdminRoles): boolean {
  try {
    assertMayAdminister(caller, tenant, roles);
    return true;
  } catch {
    return false;
  }
}

/** 403 before anything is read, for a caller with neither role: whatever the target, they may do nothing here. */
function assertHasAnAdminRole(caller: Caller, roles: AdminRoles): void {
  adminAuthorityOf(caller, roles);
}

/**
 * The export as NDJSON: one `{"collection", "document"}` line per document (the document in
 * canonical Extended JSON), then one `{"manifest"}` line with counts and hashes; `finish` records
 * it in the audit log before the manifest is sent.
 */
function exportLines(deps: LifecycleRoutesDeps, target: UserTarget | TenantTarget) {
  return async function* (finish: (manifestHash: string, counts: Record<string, number>) => Promise<unknown>): AsyncGenerator<string> {
    const manifest = new ManifestBuilder();
    for await (const line of exportData(deps.database.db, target, deps.database.cipher)) {
      manifest.add(line);
      yield `{"collection":${JSON.stringify(line.collection)},"document":${line.line}}\n`;
    }
    const built = manifest.build(target, new Date());
    await finish(built.hash, Object.fromEntries(Object.entries(built.collections).map(([name, c]) => [name, c.count])));
    yield `${JSON.stringify({ manifest: built })}\n`;
  };
}
