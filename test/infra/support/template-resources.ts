import type { Template } from "aws-cdk-lib/assertions";

/** A synthesized template's resources, as CloudFormation reads them. */
export type TemplateResources = Record<string, { Type: string; Properties?: Record<string, unknown>; DependsOn?: string | string[]; DeletionPolicy?: string }>;

export const resourcesOf = (template: Template) => template.toJSON().Resources as TemplateResources;

/** The logical id of the one resource of `type` whose id starts with `prefix`. */
export function idOf(resources: TemplateResources, type: string, prefix: string): string {
  const id = Object.keys(resources).find((k) => resources[k].Type === type && k.startsWith(prefix));
  if (!id) throw new Error(`no ${type} ${prefix}`);
  return id;
}

/** The statements of a function's role policy (`<Name>FunctionRoleDefaultPolicy…`) whose actions are in `service`. */
export function statementsFor(resources: TemplateResources, functionPrefix: string, service: string): { Effect: string; Action: unknown; Resource: unknown }[] {
  const policy = resources[idOf(resources, "AWS::IAM::Policy", `${functionPrefix}FunctionRoleDefaultPolicy`)];
  const statements = (policy.Properties as { PolicyDocument: { Statement: { Effect: string; Action: string | string[]; Resource: unknown }[] } }).PolicyDocument
    .Statement;
  return statements.filter((s) => [s.Action].flat().some((a) => a.startsWith(`${service}:`)));
}

/** A function's environment variables (`<Name>Function…`), values as the template has them. */
export function variablesFor(resources: TemplateResources, functionPrefix: string): Record<string, unknown> {
  const fn = resources[idOf(resources, "AWS::Lambda::Function", `${functionPrefix}Function`)];
  return (fn.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables;
}

/** The logical ids a value refers to: Ref, Fn::GetAtt and Fn::Sub's `${Id}` / `${Id.Attr}`. */
function referencesIn(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) referencesIn(v, into);
  else if (value && typeof value === "object") {
    for (const [key, v] of Object.entries(value)) {
      if (key === "Ref" && typeof v === "string") into.add(v);
      else if (key === "Fn::GetAtt") into.add(Array.isArray(v) ? String(v[0]) : String(v).split(".")[0]);
      else if (key === "Fn::Sub") {
        const text = Array.isArray(v) ? String(v[0]) : String(v);
        for (const m of text.matchAll(/\$\{([A-Za-z0-9]+)[.}]/g)) into.add(m[1]);
        referencesIn(v, into);
      } else referencesIn(v, into);
    }
  }
  return into;
}

/** A dependency cycle among the template's resources (what CloudFormation refuses as "Circular dependency"), or undefined. */
export function cycleIn(resources: TemplateResources): string[] | undefined {
  const edges = new Map(
    Object.entries(resources).map(([id, r]) => {
      const refs = referencesIn(r.Properties ?? {}, new Set([r.DependsOn ?? []].flat()));
      return [id, [...refs].filter((ref) => ref in resources)];
    }),
  );
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === "done") return undefined;
    if (state.get(id) === "open") return [...path.slice(path.indexOf(id)), id];
    state.set(id, "open");
    path.push(id);
    for (const next of edges.get(id) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    state.set(id, "done");
    return undefined;
  };
  for (const id of edges.keys()) {
    const found = visit(id);
    if (found) return found;
  }
  return undefined;
}
