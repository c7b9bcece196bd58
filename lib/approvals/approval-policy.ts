import { approversOf, type ApprovalRule, type Approvers, type ToolApprovalPolicy } from "../config/approvals-config.js";
import { ValidationError } from "../errors.js";
import type { Caller, Principal } from "../auth/principal.js";

/** What the policy needs to know of a tool: whether it changes things. */
export interface PolicyTool {
  name: string;
  sideEffects: boolean;
}

function matches(rule: ApprovalRule, args: Record<string, unknown>): boolean {
  const value = Object.hasOwn(args, rule.argument) ? args[rule.argument] : undefined;
  if ("present" in rule) return value !== undefined && value !== null && value !== "";
  if ("equals" in rule) return value === rule.equals;
  if ("in" in rule) return (typeof value === "string" || typeof value === "number") && rule.in.includes(value);
  return typeof value === "number" && value >= rule.atLeast;
}

function samePrincipal(a: Principal, b: Principal): boolean {
  return a.issuer === b.issuer && a.tenant === b.tenant && a.subject === b.subject;
}

/**
 * Which tool calls wait for a person, and who that may be (`TOOL_APPROVALS`). Only tools that
 * change things can wait: a policy naming a read-only tool is refused when the app is built.
 */
export class ApprovalPolicy {
  readonly #policies = new Map<string, ToolApprovalPolicy>();

  constructor(policies: Readonly<Record<string, ToolApprovalPolicy>>, tools: readonly PolicyTool[]) {
    for (const [name, policy] of Object.entries(policies)) {
      const tool = tools.find((t) => t.name === name);
      // A configured name this deployment leaves off (no Power BI, say) guards nothing.
      if (!tool) continue;
      if (!tool.sideEffects && (policy.require !== "never" || policy.afterUntrustedOutput !== undefined)) {
        throw new ValidationError("invalid configuration", [{ path: `TOOL_APPROVALS.${name}`, message: "a read-only tool never waits for approval" }]);
      }
      this.#policies.set(name, policy);
    }
  }

  /**
   * Who must approve this call before it runs; undefined when it runs at once. `turn.readUntrusted`:
   * the turn read an untrusted tool's output before this call, which makes a policy with
   * `afterUntrustedOutput: "wait"` hold it whatever its arguments. A `when` rule reads the
   * arguments the model wrote, which text the model read can dictate: a convenience, not a defence.
   */
  approversFor(toolName: string, args: Record<string, unknown>, turn: { readUntrusted: boolean } = { readUntrusted: false }): Approvers | undefined {
    const policy = this.#policies.get(toolName);
    if (!policy) return undefined;
    if (policy.afterUntrustedOutput === "wait" && turn.readUntrusted) return approversOf(policy);
    if (policy.require === "never") return undefined;
    if (policy.require !== "always" && !matches(policy.require.when, args)) return undefined;
    return approversOf(policy);
  }

  /** Whether `caller` may decide an approval asked by `requester`. */
  static mayDecide(approvers: Approvers, requester: Principal, caller: Caller): boolean {
    if (approvers.requester && samePrincipal(requester, caller.principal)) return true;
    return approvers.roles.some((role) => caller.roles.includes(role));
  }
}
