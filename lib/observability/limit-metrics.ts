/**
 * The usage metrics of the limits (docs/limits.md, "Operations"), published in namespace
 * `Threadwise` with the `service` dimension only: the tenant is a property of each record (an
 * embedded metric format property, searchable in Logs Insights), never a dimension, so the number
 * of metrics does not grow with the tenants. The stack's spend widget and budget alarms read them.
 */
export const LIMIT_METRIC_NAMES = {
  /** Weighted model tokens of one settled call, one data point per tenant of the call. */
  tenantTokens: "TenantTokens",
  /** US dollars of one settled call. */
  tenantCostUsd: "TenantCostUsd",
  /**
   * The calling tenant's spend this month against its monthly budget, in percent, after each of
   * its calls; its Maximum over a period is the most-spent tenant's. Absent for a tenant without a budget.
   */
  tenantBudgetPercent: "TenantBudgetPercent",
} as const;

/** The EMF property naming the tenant of a record (`issuer:tenant`). */
export const TENANT_PROPERTY = "tenant";
