import { DEFAULT_VIEW_TOOL_OUTPUT_TOKENS } from "../config/config.js";
import { countTextTokens } from "../model-view/token-counter.js";
import type { ArtifactRef, ArtifactStore } from "../store/artifact-store.js";
import type { Principal } from "../auth/principal.js";

/**
 * Outputs above this many tokens leave the checkpoint for the artifact store. The same number
 * as the model view's per-output threshold (`view.toolOutputTokens`): an output the view would
 * replace by a notice is not worth copying into every later checkpoint either.
 */
export const DEFAULT_OFFLOAD_TOKENS = DEFAULT_VIEW_TOOL_OUTPUT_TOKENS;

export interface ToolOutputMeta {
  conversationId: string;
  /** Whose tool call produced the output. */
  createdBy: Principal;
  turnId: string;
  toolCallId: string;
  toolName: string;
}

export interface OffloadOptions {
  artifacts: ArtifactStore;
  /** Default: DEFAULT_OFFLOAD_TOKENS; pass `config.view.toolOutputTokens`. */
  thresholdTokens?: number;
}

/** Fields for the checkpointed ToolMessage: the output itself, or its preview and the artifact that holds it. */
export interface OffloadedOutput {
  content: string;
  artifact?: ArtifactRef;
}

/**
 * Keeps large tool outputs out of checkpoints. Under the threshold the output is the content;
 * over it, the output is stored once in the artifact store and the message carries a preview
 * and the artifact's handle, which the model view turns into a notice naming the handle.
 */
export async function offloadToolOutput(output: string, meta: ToolOutputMeta, options: OffloadOptions): Promise<OffloadedOutput> {
  const tokens = countTextTokens(output);
  if (tokens <= (options.thresholdTokens ?? DEFAULT_OFFLOAD_TOKENS)) return { content: output };
  const artifact = await options.artifacts.put({ ...meta, content: output, tokens });
  return { content: artifact.preview, artifact };
}
