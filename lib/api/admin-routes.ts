import { adminAuthorityOf, authorizeAdmin, type AdminRoles } from "../auth/admin-scope.js";
import type { Caller } from "../auth/principal.js";
import { LIMIT_NAMES, type LimitValues } from "../config/limits-config.js";
import { ValidationError } from "../errors.js";
import type { LimitScope } from "../limits/limit-scope.js";
import type { Limits } from "../limits/limits.js";
import { effectiveLimits } from "../limits/limit-overrides.js";
import { setLimitsBody, scopeQuery, usageQuery } from "./admin-schemas.js";
import { json, type Authenticate, type HttpRequest, type HttpResponse } from "./http.js";
import { parseJsonBody, parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";
import type { AuditLog } from "../audit/audit-log.js";
import { actorOf, requestIdOf } from "./lifecycle-routes.js";

export interface AdminRoutesDeps {
  authenticate: Authenticate;
  limits: Limits;
  /** The operator and tenant-admin roles: who administers which scope (`lib/auth/admin-scope.ts`). */
  roles: AdminRoles;
  /** Records each change of limits with its before and after (docs/data-lifecycle.md). Default: none. */
  audit?: AuditLog;
}

/** Days of usage `GET /v1/admin/usage` shows when `from` is not given. */
export const DEFAULT_USAGE_DAYS = 30;
/** Most days one usage request may span. */
export const MAX_USAGE_DAYS = 400;

function scopeOf(q: { issuer: LimitScope["issuer"]; tenant?: string; subject?: string }): LimitScope {
  if (q.subject === undefined && q.tenant === undefined) {
    throw new ValidationError("name a tenant, a user, or both", [{ path: "tenant", message: "required without subject" }]);
  }
  return { kind: q.subject === undefined ? "tenant" : "user", issuer: q.issuer, tenant: q.tenant ?? null, subject: q.subject ?? null };
}

/** An admin change's audit entry, before its values: who, which tenant or user, from which request. */
function adminChange(caller: Caller, request: HttpRequest, scope: LimitScope, action: "limits.set") {
  const resource = { kind: scope.kind, subject: scope.subject };
  return { action, actor: actorOf(caller), tenant: { issuer: scope.issuer, tenant: scope.tenant }, resource, channel: "api", requestId: requestIdOf(request) };
}

const dayOf = (date: Date) => date.toISOString().slice(0, 10);

/**
 * The admin API (docs/limits.md): read and set a tenant's or user's limits, read its usage per
 * day. An operator on any scope, a tenant admin on its own tenant and its users; anyone else, or a
 * scope outside the caller's, is 403 and nothing is read or changed.
 */
export function adminRoutes(deps: AdminRoutesDeps): Route[] {
  const { limits } = deps;
  const admin = async (request: HttpRequest) => {
    const caller = await deps.authenticate(request);
    adminAuthorityOf(caller, deps.roles);
    return caller;
  };
  /** The scope a request names, once the caller may administer it. */
  const authorized = (caller: Caller, scope: LimitScope): LimitScope => {
    authorizeAdmin(caller, deps.roles, scope);
    return scope;
  };

  const view = async (scope: LimitScope): Promise<HttpResponse> => {
    const [own, current] = await Promise.all([limits.overrides.get(scope), limits.ledger.current(scope)]);
    const defaults = limits.defaults(scope.kind);
    return json(200, {
      scope,
      limits: effectiveLimits(defaults, own?.limits),
      own: own?.limits ?? null,
      defaults,
      current,
      updatedAt: own?.updatedAt.toISOString() ?? null,
    });
  };

  return [
    {
      method: "GET",
      pattern: /^\/v1\/admin\/limits$/,
      handler: async (request) => {
        const caller = await admin(request);
        return view(authorized(caller, scopeOf(parseQuery(request, scopeQuery))));
      },
    },
    {
      method: "PUT",
      pattern: /^\/v1\/admin\/limits$/,
      handler: async (request) => {
        const caller = await admin(request);
        const body = parseJsonBody(request, setLimitsBody);
        const scope = authorized(caller, scopeOf(body));
        const values: LimitValues = Object.fromEntries(LIMIT_NAMES.flatMap((n) => (body.limits[n] === undefined ? [] : [[n, body.limits[n]]])));
        const before = (await limits.overrides.get(scope))?.limits ?? null;
        await limits.overrides.set(scope, values, JSON.stringify([caller.principal.issuer, caller.principal.tenant, caller.principal.subject]));
        await deps.audit?.append({ ...adminChange(caller, request, scope, "limits.set"), before, after: values });
        return view(scope);
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/admin\/usage$/,
      handler: async (request) => {
        const caller = await admin(request);
        const q = parseQuery(request, usageQuery);
        const scope = authorized(caller, scopeOf(q));
        const to = q.to ?? dayOf(new Date());
        const from = q.from ?? dayOf(new Date(Date.parse(to) - (DEFAULT_USAGE_DAYS - 1) * 86_400_000));
        const span = (Date.parse(to) - Date.parse(from)) / 86_400_000;
        if (!(span >= 0 && span < MAX_USAGE_DAYS)) {
          throw new ValidationError("from must be on or before to, at most 400 days apart", [{ path: "from", message: "out of range" }]);
        }
        const days = await limits.usage(scope, from, to);
        const total = { turns: 0, modelCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, weightedTokens: 0, costUsd: 0 };
        for (const d of days) for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += d[key];
        return json(200, { scope, from, to, days, total });
      },
    },
  ];
}
