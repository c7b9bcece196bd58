import { authorizeAdmin, type AdminRoles } from "../auth/admin-scope.js";
import type { Caller } from "../auth/principal.js";
import type { TenantRef } from "../crypto/tenant-keys.js";
import type { KeyRotation } from "../lifecycle/key-rotation.js";
import { contentKeyTenantQuery, rotateContentKeyBody } from "./content-key-schemas.js";
import { json, type Authenticate, type HttpRequest } from "./http.js";
import { actorOf, requestIdOf } from "./lifecycle-routes.js";
import { parseJsonBody, parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";

export interface ContentKeyRoutesDeps {
  authenticate: Authenticate;
  keyRotation: KeyRotation;
  /** The operator and tenant-admin roles, as the other admin routes (`lib/auth/admin-scope.ts`). */
  roles: AdminRoles;
}

/**
 * `/v1/admin/content-keys` (docs/security.md, "Rotation"): rotate a tenant's content key now, and
 * read its re-encryption's progress. An operator on any tenant, a tenant admin on its own; anyone
 * else, or another tenant, is 403 and nothing is rotated or read.
 */
export function contentKeyRoutes(deps: ContentKeyRoutesDeps): Route[] {
  /** The tenant a request names, once the caller may administer it. */
  const authorized = async (request: HttpRequest, q: { issuer: TenantRef["issuer"]; tenant?: string }): Promise<{ caller: Caller; tenant: TenantRef }> => {
    const caller = await deps.authenticate(request);
    const tenant = { issuer: q.issuer, tenant: q.tenant ?? null };
    authorizeAdmin(caller, deps.roles, tenant);
    return { caller, tenant };
  };
  return [
    {
      method: "POST",
      pattern: /^\/v1\/admin\/content-keys\/rotate$/,
      handler: async (request) => {
        const { caller, tenant } = await authorized(request, parseJsonBody(request, rotateContentKeyBody));
        const by = { actor: actorOf(caller), channel: "api", requestId: requestIdOf(request) };
        return json(200, await deps.keyRotation.rotate(tenant, by));
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/admin\/content-keys$/,
      handler: async (request) => {
        const { tenant } = await authorized(request, parseQuery(request, contentKeyTenantQuery));
        return json(200, { tenant, reencryption: await deps.keyRotation.status(tenant) });
      },
    },
  ];
}
