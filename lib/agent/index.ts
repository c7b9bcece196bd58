export { createAgentGraph, type AgentGraph, type AgentGraphOptions, type TurnContext } from "./graph.js";
export {
  TurnRunner,
  DEFAULT_MAX_MODEL_CALLS,
  type ThreadFencing,
  type ThreadMessage,
  type TurnRequest,
  type TurnResult,
  type TurnRunnerDeps,
} from "./turn-runner.js";
export { createChatModel } from "./chat-model.js";
export { LocalChatModel, type FunctionTool } from "./local-chat-model.js";
export { RegistryToolRunner, type OutputOffload, type ToolExecution, type ToolExecutor } from "./registry-tool-runner.js";
export type { ToolCallRequest, ToolRunner } from "./tool-runner.js";
export { DEFAULT_SYSTEM_PROMPT } from "./system-prompt.js";
export { ARCHIVE_FAULT_POINTS, FAULT_POINTS, type FaultInjector, type FaultPoint } from "./fault-points.js";
export {
  TurnRecovery,
  DEFAULT_RECOVERY_SWEEP_LIMIT,
  INTERRUPTED_CODE,
  type RecoveryOutcome,
  type RecoverySweepResult,
  type TurnRecoveryDeps,
} from "./turn-recovery.js";
export { TURN_RECOVERY_EVENT, isTurnRecoveryEvent, type TurnRecoveryEvent } from "./turn-recovery-event.js";
