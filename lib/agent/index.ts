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
