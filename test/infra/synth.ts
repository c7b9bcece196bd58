import { readFileSync } from "node:fs";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { readStageConfig } from "../../infra/stage-config.js";
import { ThreadwiseStack } from "../../infra/threadwise-stack.js";

export interface SynthOptions {
  /** CDK context, as `-c key=value` would give it. */
  context?: Record<string, unknown>;
  /** Run esbuild for the functions; off by default because it takes seconds per function. */
  bundle?: boolean;
  /**
   * Run CDK's built-in CloudFormation validation, as `cdk synth` does. Off by default: its
   * WebAssembly engine takes about 5 s of CPU to start in each test process.
   */
  validate?: boolean;
}

/** The CDK feature flags of cdk.json (keys starting with `@`), which `cdk synth` applies to the app. */
export const FEATURE_FLAGS: Record<string, unknown> = Object.fromEntries(
  Object.entries(JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")).context as Record<string, unknown>).filter(([key]) =>
    key.startsWith("@"),
  ),
);

/** Builds the stack as infra/app.ts does, from context alone, with cdk.json's feature flags. */
export function buildStack(options: SynthOptions = {}): { app: App; stack: ThreadwiseStack } {
  const app = new App({
    builtinCloudFormationValidation: options.validate ?? false,
    context: {
      ...FEATURE_FLAGS,
      ...options.context,
      // CDK's own switch: an empty list of bundling stacks makes assets placeholders.
      ...(options.bundle ? {} : { "aws:cdk:bundling-stacks": [] }),
    },
  });
  const config = readStageConfig(app.node);
  const stack = new ThreadwiseStack(app, `${config.stage}-threadwise`, { config });
  return { app, stack };
}

export function synthTemplate(options: SynthOptions = {}): Template {
  return Template.fromStack(buildStack(options).stack);
}
