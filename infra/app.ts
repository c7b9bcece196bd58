import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { ValidationError } from "../lib/errors.js";
import { explainContextError, readStageConfig } from "./stage-config.js";
import { ThreadwiseStack } from "./threadwise-stack.js";

const app = new App();
try {
  const config = readStageConfig(app.node);
  new ThreadwiseStack(app, `${config.stage}-threadwise`, { config, description: `Threadwise (${config.stage})` });
} catch (error) {
  if (!(error instanceof ValidationError)) throw error;
  console.error(explainContextError(error));
  process.exit(1);
}
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
