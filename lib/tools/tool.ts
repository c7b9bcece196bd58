import type { z } from "zod";
import type { WriteFence } from "../store/write-fence.js";

/** Who is asking: taken from the verified credential, never from the request body. */
export interface Caller {
  userId: string;
  tenantId?: string;
  /** Roles or groups from the credential; tool permissions are checked against them. */
  roles: string[];
}

export interface ToolContext {
  conversationId: string;
  turnId: string;
  toolCallId: string;
  caller: Caller;
  signal?: AbortSignal;
  /** Present whenever a turn runs the tool: a tool that writes does so under it, so a stale turn writes nothing. */
  fence?: WriteFence;
}

/**
 * One tool the model may call. Tools return text for the model; a thrown `ToolError`
 * becomes a tool error the model sees, and the turn goes on.
 */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: S;
  /** A tool with side effects runs through the idempotency guard, keyed by conversation and tool call. */
  sideEffects: boolean;
  /** Roles allowed to use the tool. Default: everyone. */
  allowedRoles?: readonly string[];
  run(input: z.infer<S>, ctx: ToolContext): Promise<string>;
}
