/**
 * Before a deploy: `npm run preflight -- --stage <s>` checks what the stage needs with the
 * operator's AWS credentials (docs/deploying.md, "Preflight"). One line per problem, each with
 * what to do; the exit code is 1 when there is one.
 */
import { readFileSync } from "node:fs";
import { BedrockClient } from "@aws-sdk/client-bedrock";
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { App } from "aws-cdk-lib";
import { bedrockResourceArns } from "../infra/bedrock-model.js";
import { FUNCTION_NAMES, planConnections } from "../infra/connection-budget.js";
import { readStageConfig } from "../infra/stage-config.js";
import { CREDENTIAL_SECRETS, type CredentialSecretName } from "../lib/config/credentials.js";
import { parseCliArgs } from "../lib/local/cli-args.js";
import { checkContentEncryption, runPreflight } from "../lib/ops/index.js";

const USAGE = "usage: npm run preflight -- --stage <stage>";
const { values } = parseCliArgs(USAGE, { options: { stage: { type: "string" } } });
if (!values.stage) {
  process.stderr.write(`error: --stage is required\n${USAGE}\n`);
  process.exit(2);
}
// The stage as `cdk deploy -c stage=<s>` reads it: cdk.json's context, this stage.
const context = JSON.parse(readFileSync(new URL("../cdk.json", import.meta.url), "utf8")).context as Record<string, unknown>;
const config = readStageConfig(new App({ context: { ...context, stage: values.stage } }).node);
const names: CredentialSecretName[] = ["database", "slackSigning", "teamsBot", "channelReplies", ...(config.tools.powerBi ? (["powerBi"] as const) : [])];
const secretIds = Object.fromEntries(names.map((name) => [name, config.secretArns[name] ?? `${config.stage}/threadwise/${CREDENTIAL_SECRETS[name].name}`]));
// The last resource of the model's grant is its foundation model, whatever form bedrockModelId takes.
const modelArn = bedrockResourceArns(config.bedrockModelId, { partition: "aws", region: "*", account: "*" }, config.bedrockFoundationModelId).at(-1)!;
const region = config.environment?.region;
// The reservations the stack will make, as infra/threadwise-stack.ts plans them.
const plan = planConnections({
  budget: config.mongodb.connectionBudget,
  replicaSetMembers: config.mongodb.replicaSetMembers,
  workerMaxConcurrency: config.workerMaxConcurrency,
  // The recovery schedule runs in every stage, as the stack plans it.
  scheduledSweep: true,
  streamConcurrency: config.streamConcurrency,
  webhookConcurrency: config.ceilings.webhookConcurrency,
});
const reservedConcurrency = Object.fromEntries(FUNCTION_NAMES.map((name) => [`${config.stage}-threadwise-${name}`, plan.reservedConcurrency[name]]));

const problems = await runPreflight({
  secretIds,
  modelId: config.bedrockModelId,
  foundationModelId: modelArn.slice(modelArn.lastIndexOf("/") + 1),
  secrets: new SecretsManagerClient({ region }),
  bedrockRuntime: new BedrockRuntimeClient({ region }),
  bedrock: new BedrockClient({ region }),
  lambda: new LambdaClient({ region }),
  reservedConcurrency,
});
// Contents in clear are reported, not failed: the stage may have chosen it (docs/security.md, "Contents at rest in AWS").
const notices = await checkContentEncryption({
  enabled: config.contentEncryption.enabled,
  functionNames: ["api", "stream", "worker", "setup"].map((name) => `${config.stage}-threadwise-${name}`),
  lambda: new LambdaClient({ region }),
});
for (const n of notices) process.stdout.write(`NOTE ${n.check}: ${n.notice} (${n.setting})\n`);
for (const p of problems) process.stdout.write(`FAIL ${p.check}: ${p.problem}. Fix: ${p.fix}\n`);
if (problems.length === 0)
  process.stdout.write(
    `ok   ${config.stage}: secrets filled in, MongoDB reachable, ${config.bedrockModelId} answers, Marketplace access in place, account concurrency fits\n`,
  );
process.exit(problems.length === 0 ? 0 : 1);
