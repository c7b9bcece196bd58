import { DEFAULT_VIEW_TOOL_OUTPUT_TOKENS } from "../config/view-config.js";
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

/**
 * Every output is stored, whatever its size, so nothing a tool returned becomes unreachable once the
 * view stops showing it: the turn digest names its handle (issue 46). An output under the threshold
 * stays whole in the message too; the artifact is its copy.
 */
export const DEFAULT_HANDLE_EVERY_OUTPUT = true;

export interface OffloadOptions {
  artifacts: ArtifactStore;
  /** Default: DEFAULT_OFFLOAD_TOKENS; pass `config.view.toolOutputTokens`. */
  thresholdTokens?: number;
  /** Store outputs under the threshold too (an `inline` artifact beside the whole content). Default: {@link DEFAULT_HANDLE_EVERY_OUTPUT}. */
  handleEveryOutput?: boolean;
}

/** Fields for the checkpointed ToolMessage: the output itself (with its stored copy), or its preview and the artifact that holds it. */
export interface OffloadedOutput {
  content: string;
  artifact?: ArtifactRef & { inline?: true };
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
 * Keeps large tool outputs out of checkpoints, and every output reachable. Under the threshold the
 * output is the content, and (with `handleEveryOutput`) a copy is stored, named by an `inline`
 * artifact; over it, the output is stored once in the artifact store and the message carries a
 * preview and the artifact's handle, which the model view turns into a notice naming the handle.
 */
export async function offloadToolOutput(output: string, meta: ToolOutputMeta, options: OffloadOptions): Promise<OffloadedOutput> {
  const content = withinBytes(output, options.artifacts.maxBytes);
  const tokens = countTextTokens(content);
  const under = tokens <= (options.thresholdTokens ?? DEFAULT_OFFLOAD_TOKENS);
  if (under && !(options.handleEveryOutput ?? DEFAULT_HANDLE_EVERY_OUTPUT)) return { content };
  const { fence, ...fields } = meta;
  const artifact = await options.artifacts.put({ ...fields, content, tokens }, fence);
  return under ? { content, artifact: { ...artifact, inline: true } } : { content: artifact.preview, artifact };
}
