import { DEFAULT_VIEW_TOOL_OUTPUT_TOKENS } from "../config/config.js";
import { countTextTokens } from "../model-view/token-counter.js";
import type { ArtifactRef, ArtifactStore } from "../store/artifact-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { Principal } from "../auth/principal.js";

/**
 * Outputs above this many tokens leave the checkpoint for the artifact store. The same number
 * as the model view's per-output threshold (`view.toolOutputTokens`): an output the view would
 * replace by a notice is not worth copying into every later checkpoint either.
 */
export const DEFAULT_OFFLOAD_TOKENS = DEFAULT_VIEW_TOOL_OUTPUT_TOKENS;

export interface ToolOutputMeta {
  /** Whose tool call produced the output. */
  createdBy: Principal;
  turnId: string;
  toolCallId: string;
  toolName: string;
  /** The turn's fence: the artifact is stored only while the turn holds its conversation, with its expiry. */
  fence: WriteFence;
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
 * An output the artifact store could not hold is cut to its first part, led by a note the model
 * reads in the preview: a tool (or its backend) returning too much must not fail the turn.
 */
function withinBytes(output: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(output, "utf8");
  if (bytes <= maxBytes) return output;
  const note = `[Output cut: the tool returned ${bytes} bytes, over the ${maxBytes}-byte limit of a stored output; only the first part is kept.]\n`;
  // encodeInto stops before a character that does not fit, so the cut never splits one.
  const { read } = new TextEncoder().encodeInto(output, new Uint8Array(Math.max(0, maxBytes - Buffer.byteLength(note, "utf8"))));
  return note + output.slice(0, read);
}

/**
 * Keeps large tool outputs out of checkpoints. Under the threshold the output is the content;
 * over it, the output is stored once in the artifact store and the message carries a preview
 * and the artifact's handle, which the model view turns into a notice naming the handle.
 */
export async function offloadToolOutput(output: string, meta: ToolOutputMeta, options: OffloadOptions): Promise<OffloadedOutput> {
  const content = withinBytes(output, options.artifacts.maxBytes);
  const tokens = countTextTokens(content);
  if (tokens <= (options.thresholdTokens ?? DEFAULT_OFFLOAD_TOKENS)) return { content };
  const { fence, ...fields } = meta;
  const artifact = await options.artifacts.put({ ...fields, content, tokens }, fence);
  return { content: artifact.preview, artifact };
}
