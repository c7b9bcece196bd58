export { Limits, type CallReservation, type LimitsOptions, type LimitUsageEvent, type LimitUsageSink, type ModelCallEstimate } from "./limits.js";
export { effectiveLimits, LimitOverrides, LIMIT_OVERRIDES_COLLECTION, type LimitOverrideDocument } from "./limit-overrides.js";
export { scopeId, scopesOf, type LimitScope, type ScopeKind } from "./limit-scope.js";
export { LIMIT_COUNTERS_COLLECTION, UsageLedger } from "./usage-ledger.js";
export { USAGE_DAILY_COLLECTION, type CallUsage, type UsageDay } from "./daily-usage.js";
export type { Amount } from "./limit-claims.js";
export { TurnAdmission, type AdmissionOptions, type TurnHold, type TurnToAdmit } from "./turn-admission.js";
export { windowsAt, type Windows } from "./windows.js";
