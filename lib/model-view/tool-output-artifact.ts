import type { ToolMessage } from "@langchain/core/messages";
import { z } from "zod";

/**
 * What a tool message whose output is stored in the `artifacts` collection carries in its LangChain
 * `artifact` field: offloaded, its `content` is only a short preview; `inline`, its `content` is the
 * whole output and the artifact is a copy that keeps it reachable (`read_tool_output`) after the
 * view stops showing it (issue 46).
 */
export const toolOutputArtifactSchema = z.object({
  handle: z.string().min(1),
  bytes: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  preview: z.string(),
  inline: z.literal(true).optional(),
});

export type ToolOutputArtifact = z.infer<typeof toolOutputArtifactSchema>;

/** The artifact reference of a stored output, offloaded or inline, or undefined when it has none. */
export function storedArtifact(message: ToolMessage): ToolOutputArtifact | undefined {
  if (message.artifact === undefined || message.artifact === null) return undefined;
  const parsed = toolOutputArtifactSchema.safeParse(message.artifact);
  return parsed.success ? parsed.data : undefined;
}

/** The artifact reference of an offloaded output (its content only a preview), or undefined when the output is inline. */
export function offloadedArtifact(message: ToolMessage): ToolOutputArtifact | undefined {
  const artifact = storedArtifact(message);
  return artifact?.inline ? undefined : artifact;
}
