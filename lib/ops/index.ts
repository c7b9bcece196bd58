export { DEFAULT_SMOKE_POLL_MS, DEFAULT_SMOKE_TURN_TIMEOUT_MS, runSmoke, type SmokeOptions, type SmokeStep } from "./smoke.js";
export {
  checkContentEncryption,
  DEFAULT_PREFLIGHT_MONGODB_TIMEOUT_MS,
  runPreflight,
  type ContentEncryptionCheckOptions,
  type PreflightNotice,
  type PreflightOptions,
  type PreflightProblem,
} from "./preflight.js";
