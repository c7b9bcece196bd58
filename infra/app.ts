import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { readStageConfig } from "./stage-config.js";
import { ThreadwiseStack } from "./threadwise-stack.js";

const app = new App();
const config = readStageConfig(app.node);
new ThreadwiseStack(app, `${config.stage}-threadwise`, { config, description: `Threadwise (${config.stage})` });
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
