import { adminAuthorityOf, authorizeAdmin, type AdminRoles } from "../auth/admin-scope.js";
import type { Caller } from "../auth/principal.js";
import type { McpServerEntry } from "../config/mcp-servers-config.js";
import { NotFoundError } from "../errors.js";
import type { McpServerStore, McpTenant } from "../mcp/mcp-server-store.js";
import { effectiveMcpServers } from "../mcp/effective-mcp-servers.js";
import { mcpServerNameQuery, mcpTenantQuery, putMcpServerBody } from "./admin-mcp-schemas.js";
import { json, type Authenticate, type HttpRequest } from "./http.js";
import { parseJsonBody, parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";
import type { AuditLog } from "../audit/audit-log.js";
import { actorOf, requestIdOf } from "./lifecycle-routes.js";

export interface AdminMcpRoutesDeps {
  authenticate: Authenticate;
  store: McpServerStore;
  /** `MCP_SERVERS`: every tenant's servers. */
  defaults: readonly McpServerEntry[];
  /** The operator and tenant-admin roles, as the other admin routes (`lib/auth/admin-scope.ts`). */
  roles: AdminRoles;
  /** Records each entry added, replaced or removed with its before and after (docs/data-lifecycle.md). Default: none. */
  audit?: AuditLog;
}

/**
 * `/v1/admin/mcp-servers` (docs/mcp.md): list, add or replace, and remove a tenant's MCP server
 * entries. An operator on any tenant, a tenant admin on its own; anyone else, or another tenant, is
 * 403 and nothing is read or changed.
 */
export function adminMcpRoutes(deps: AdminMcpRoutesDeps): Route[] {
  const admin = async (request: HttpRequest) => {
    const caller = await deps.authenticate(request);
    adminAuthorityOf(caller, deps.roles);
    return caller;
  };
  const change = (request: HttpRequest, caller: Caller, tenant: McpTenant, action: "mcp_server.put" | "mcp_server.delete", name: string) => ({
    action,
    actor: actorOf(caller),
    tenant,
    resource: { server: name },
    channel: "api",
    requestId: requestIdOf(request),
  });
  /** The tenant a request names, once the caller may administer it. */
  const tenantOf = (caller: Caller, q: { issuer: McpTenant["issuer"]; tenant?: string }): McpTenant => {
    const tenant = { issuer: q.issuer, tenant: q.tenant ?? null };
    authorizeAdmin(caller, deps.roles, tenant);
    return tenant;
  };
  const view = async (tenant: McpTenant) => {
    const own = await deps.store.list(tenant);
    return json(200, {
      tenant,
      servers: effectiveMcpServers(
        deps.defaults,
        own.map((d) => d.entry),
      ),
      own: own.map((d) => ({ server: d.entry, updatedAt: d.updatedAt.toISOString() })),
      defaults: deps.defaults,
    });
  };
  const pattern = /^\/v1\/admin\/mcp-servers$/;
  return [
    {
      method: "GET",
      pattern,
      handler: async (request) => {
        const caller = await admin(request);
        return view(tenantOf(caller, parseQuery(request, mcpTenantQuery)));
      },
    },
    {
      method: "PUT",
      pattern,
      handler: async (request) => {
        const caller = await admin(request);
        const body = parseJsonBody(request, putMcpServerBody);
        const tenant = tenantOf(caller, body);
        const before = (await deps.store.list(tenant)).find((d) => d.name === body.server.name)?.entry ?? null;
        await deps.store.put(tenant, body.server, JSON.stringify([caller.principal.issuer, caller.principal.tenant, caller.principal.subject]));
        await deps.audit?.append({ ...change(request, caller, tenant, "mcp_server.put", body.server.name), before, after: body.server });
        return view(tenant);
      },
    },
    {
      method: "DELETE",
      pattern,
      handler: async (request) => {
        const caller = await admin(request);
        const q = parseQuery(request, mcpServerNameQuery);
        const tenant = tenantOf(caller, q);
        const before = (await deps.store.list(tenant)).find((d) => d.name === q.name)?.entry ?? null;
        if (!(await deps.store.remove(tenant, q.name))) throw new NotFoundError(`the tenant has no MCP server named ${q.name}`);
        await deps.audit?.append({ ...change(request, caller, tenant, "mcp_server.delete", q.name), before, after: null });
        return view(tenant);
      },
    },
  ];
}
