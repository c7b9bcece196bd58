import { z } from "zod";
import { ValidationError } from "../errors.js";
import { issueDetails, parseJsonSetting } from "../validation.js";

/** How long a pending approval waits for a decision before it is rejected as expired, in seconds (a working day). */
export const DEFAULT_APPROVAL_TTL_SECONDS = 28_800;

/** A condition on one argument of the call, as the model gave it. */
const ruleSchema = z.union([
  z.strictObject({ argument: z.string().min(1), present: z.literal(true) }),
  z.strictObject({ argument: z.string().min(1), equals: z.union([z.string(), z.number(), z.boolean()]) }),
  z.strictObject({
    argument: z.string().min(1),
    in: z
      .array(z.union([z.string(), z.number()]))
      .min(1)
      .max(100),
  }),
  z.strictObject({ argument: z.string().min(1), atLeast: z.number() }),
]);

/** Who may decide: the person who asked, callers with one of the roles, or both. */
const approversSchema = z
  .strictObject({ requester: z.boolean().optional(), roles: z.array(z.string().min(1)).max(50).optional() })
  .refine((a) => a.requester === true || (a.roles?.length ?? 0) > 0, { message: "name the requester, roles, or both" });

/** One tool's approval policy, as `TOOL_APPROVALS` holds it (MCP server entries reuse it for their overrides). */
export const toolApprovalPolicySchema = z.strictObject({
  /** `always`, `never`, or `{ "when": rule }`: only calls whose arguments match. */
  require: z.union([z.enum(["always", "never"]), z.strictObject({ when: ruleSchema })], {
    // zod's own message for a union is a bare "Invalid input".
    error: 'expected "always", "never" or {"when": {"argument": <name>, then "present": true, "equals": <value>, "in": [<values>] or "atLeast": <number>}}',
  }),
  /**
   * `"wait"`: a call waits, whatever `require` says, when its turn read the output of an untrusted
   * tool before it (documents, SQL data, Power BI data): what such text says cannot make the call
   * run unseen. Default: only `require` decides.
   */
  afterUntrustedOutput: z.literal("wait").optional(),
  /** Default: the requester. */
  approvers: approversSchema.optional(),
});

/** `TOOL_APPROVALS`: `{"tool_name": {"require": …, "approvers": …}}`. */
const approvalsSchema = z.record(z.string().min(1), toolApprovalPolicySchema);

export type ApprovalRule = z.infer<typeof ruleSchema>;
export type ToolApprovalPolicy = z.infer<typeof toolApprovalPolicySchema>;

/** Who may decide an approval, as stored with it. */
export interface Approvers {
  requester: boolean;
  roles: string[];
}

export interface ApprovalsConfig {
  /** Per tool name; a tool not listed never waits for approval. */
  tools: Record<string, ToolApprovalPolicy>;
  ttlSeconds: number;
}

/** The approvers of a policy: the requester unless it names others. */
export function approversOf(policy: ToolApprovalPolicy): Approvers {
  return { requester: policy.approvers?.requester ?? policy.approvers?.roles === undefined, roles: policy.approvers?.roles ?? [] };
}

/**
 * Reads `TOOL_APPROVALS` (JSON) and `APPROVAL_TTL_SECONDS`. Tool names are checked against
 * `toolNames`, as `TOOL_ROLES` is: a misspelt name would leave the real tool unguarded.
 */
export function parseApprovalsConfig(raw: string | undefined, ttl: number | undefined, toolNames: readonly string[]): ApprovalsConfig {
  const ttlSeconds = ttl ?? DEFAULT_APPROVAL_TTL_SECONDS;
  if (raw === undefined) return { tools: {}, ttlSeconds };
  const parsed = approvalsSchema.safeParse(parseJsonSetting(raw, "TOOL_APPROVALS"));
  if (!parsed.success) {
    throw new ValidationError(
      "invalid configuration",
      issueDetails(parsed.error).map((d) => ({ path: `TOOL_APPROVALS.${d.path}`, message: d.message })),
    );
  }
  const unknown = Object.keys(parsed.data).filter((name) => !toolNames.includes(name));
  if (unknown.length > 0) {
    throw new ValidationError("invalid configuration", [
      { path: "TOOL_APPROVALS", message: `unknown tool name${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")}; valid names: ${toolNames.join(", ")}` },
    ]);
  }
  return { tools: parsed.data, ttlSeconds };
}
