export { CALLER_FAILURE_REASONS, TURN_FAILURE_REASONS, turnFailureReason, type TurnFailureReason } from "./turn-failure-reason.js";
export {
  CHANNEL_DIMENSION,
  FUNCTION_DIMENSION,
  isDeployServerError,
  NOT_DEPLOY_FAILURE_REASONS,
  REASON_DIMENSION,
  TURN_OUTCOME_METRIC_NAMES,
  VERSION_DIMENSION,
  VERSION_METRIC_NAMES,
  WEBHOOK_METRIC_NAMES,
} from "./turn-outcome-metrics.js";
export { CORRELATION_ID_ATTRIBUTE, xrayTraceHeader, type TraceContext } from "./trace-context.js";
export { APPROVAL_SWEEP_METRIC_NAMES } from "./approval-sweep-metrics.js";
export {
  GEN_AI_PROVIDER_NAMES,
  MESSAGING_SYSTEMS,
  SEMCONV_ATTRIBUTES,
  TRACER_NAME,
  TURN_QUEUE_DESTINATION,
  traceModelCall,
  traceRequest,
  traceToolCall,
  withConsumerSpan,
  withProducerSpan,
  type ModelCallResult,
  type ModelCallSpan,
  type QueueHop,
  type TraceCarrier,
} from "./tracing.js";
