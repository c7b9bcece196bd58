import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { buildStack } from "../../infra/synth.js";
import type { FunctionArtifact } from "./lambda-runtime.js";

/** A synthesized stage with its bundles in cdk.out: what `cdk deploy` would upload. */
export interface DeployedStack {
  template: Template;
  /** Every function, by short name, its environment's references still unresolved. */
  functions: Record<string, FunctionArtifact & { references: Record<string, string> }>;
}

/**
 * Synthesizes the stack as `cdk synth` does, bundles and CloudFormation validation included, and
 * reads each function from the template: its bundle directory (through the asset hash in its S3
 * key), handler, timeout, memory and environment. Variables whose value is a reference (`{ Ref }`, `{ Fn::GetAtt }`) are returned as the logical id
 * they point at, for the caller to resolve to its stand-in, as CloudFormation resolves them.
 */
export function synthesizeDeployedStack(context: Record<string, unknown>): DeployedStack {
  const { app, stack } = buildStack({ context, bundle: true, validate: true });
  const template = Template.fromStack(stack);
  const directory = app.synth().directory;
  return { template, functions: functionsOf(template, (s3Key) => join(directory, `asset.${s3Key.replace(/\.zip$/, "")}`)) };
}

/** The functions of a template, each bundle found by `codeDirectory` from its S3 key. */
export function functionsOf(template: Template, codeDirectory: (s3Key: string) => string): DeployedStack["functions"] {
  const functions: DeployedStack["functions"] = {};
  for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) {
    const p = fn.Properties;
    const environment: Record<string, string> = {};
    const references: Record<string, string> = {};
    for (const [name, value] of Object.entries(p.Environment.Variables as Record<string, unknown>)) {
      if (typeof value === "string") environment[name] = value;
      else if (typeof value === "object" && value !== null && "Ref" in value) references[name] = String((value as { Ref: string }).Ref);
      else if (typeof value === "object" && value !== null && "Fn::GetAtt" in value)
        references[name] = String((value as { "Fn::GetAtt": [string] })["Fn::GetAtt"][0]);
      else throw new Error(`${p.FunctionName}: ${name} is neither a string nor a reference: ${JSON.stringify(value)}`);
    }
    const name = String(p.FunctionName).replace(/^.*-threadwise-/, "");
    functions[name] = {
      name,
      functionName: p.FunctionName,
      handler: p.Handler,
      codeDirectory: codeDirectory(String(p.Code.S3Key)),
      environment,
      references,
      timeoutSeconds: p.Timeout,
      memorySize: p.MemorySize,
    };
  }
  return functions;
}

/** The function with its references resolved by `resolve(logicalId, resource)`; an unknown reference throws. */
export function resolveReferences(
  fn: DeployedStack["functions"][string],
  template: Template,
  resolve: (logicalId: string, resource: { Type: string; Properties: Record<string, unknown> }) => string | undefined,
): FunctionArtifact {
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
  const resolved: Record<string, string> = {};
  for (const [name, logicalId] of Object.entries(fn.references)) {
    const value = resolve(logicalId, resources[logicalId]);
    if (value === undefined) throw new Error(`${fn.functionName}: no stand-in for ${name} (${resources[logicalId]?.Type} ${logicalId})`);
    resolved[name] = value;
  }
  const { references: _references, ...artifact } = fn;
  return { ...artifact, environment: { ...fn.environment, ...resolved } };
}
