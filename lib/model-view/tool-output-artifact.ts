import type { ToolMessage } from "@langchain/core/messages";
import { z } from "zod";

/**
 * What a tool message whose output was offloaded to the `artifacts` collection carries in its
 * LangChain `artifact` field; its `content` is then only a short preview.
 */
export const toolOutputArtifactSchema = z.object({
  handle: z.string().min(1),
  bytes: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  preview: z.string(),
});

export type ToolOutputArtifact = z.infer<typeof toolOutputArtifactSchema>;

/** The artifact reference of an offloaded output, or undefined when the output is inline. */
export function offloadedArtifact(message: ToolMessage): ToolOutputArtifact | undefined {
  if (message.artifact === undefined || message.artifact === null) return undefined;
  const parsed = toolOutputArtifactSchema.safeParse(message.artifact);
  return parsed.success ? parsed.data : undefined;
}
