/**
 * MongoDB from Lambda, before and after the Lambda-sized client: the connections one container
 * holds, and how long the first request takes after the container was frozen and its connections
 * were dropped without a word (as a NAT gateway drops an idle connection).
 *
 *   npm run bench:mongodb [-- --freeze-seconds 65 --before <commit>] [-- --write (results to bench/results)]
 *
 * "Before" is the code at `--before` (default: the last commit before this change), bundled by its
 * own bundling and run with its own template's environment; "after" is this checkout's stack. Each
 * function runs as the artifact tests run it: its bundle in a Node 22 process with only the
 * runtime's AWS SDK, through a Lambda Runtime API stand-in, against the embedded MongoDB behind a
 * TLS proxy that counts connections and can drop them. One container runs at a time, so the
 * proxy's open connections are that container's.
 */
import { execFileSync, execSync } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { PROJECT_ROOT } from "../infra/bundling/bundling.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { CREDENTIAL_SECRET_NAMES, CREDENTIAL_SECRETS } from "../lib/config/credentials.js";
import { appMention, envelope } from "../test/channels/slack/fixtures.js";
import { functionsOf, resolveReferences, synthesizeDeployedStack, type DeployedStack } from "../test/artifact/support/deployed-stack.js";
import { FunctionProcess, type FunctionArtifact } from "../test/artifact/support/lambda-runtime.js";
import { runtimeSdkDirectory } from "../test/artifact/support/runtime-sdk.js";
import { startLocalAws, type LocalAws } from "../test/functions/support/aws-endpoints.js";
import { startKmsKeysEndpoint } from "../test/support/kms-keys-endpoint.js";
import { apiEvent, jwtClaims } from "../test/functions/support/events.js";
import { lastUserText, startConverseEndpoint } from "../test/support/converse-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../test/support/slack-signing.js";
import { LOOPBACK_TLS, startTcpProxy, type TcpProxy } from "../test/support/tcp-proxy.js";
import { writeResults } from "./support/results.js";

/** The last commit before the Lambda-sized MongoClient, the deploy-step set-up and the verify-first webhooks. */
const DEFAULT_BEFORE = "41d82aa";
/** Longer than the stack's default `mongodbMaxIdleSeconds` (60). */
const DEFAULT_FREEZE_SECONDS = 65;
/** A freeze shorter than the idle limit: the dropped connections are then found by the socket timeout. */
const SHORT_FREEZE_SECONDS = 5;
/** An Atlas M10's connection limit. */
const M10_CONNECTIONS = 1_500;

const alice = jwtClaims("alice", { tenant: "acme" });

interface Variant {
  label: string;
  template: Template;
  functions: DeployedStack["functions"];
  aws: LocalAws;
}

/** The code at `commit`, bundled by its own bundling, with its template (synthesized by its own stack). */
function before(commit: string, mongodbDb: string): Omit<Variant, "aws"> {
  const dir = mkdtempSync(join(tmpdir(), "threadwise-before-"));
  execSync(`git archive ${commit} | tar -x -C ${dir}`, { cwd: PROJECT_ROOT });
  symlinkSync(join(PROJECT_ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  const script = join(dir, "bench-template.ts");
  writeFileSync(
    script,
    `import { synthTemplate } from "./test/infra/synth.ts";\nprocess.stdout.write(JSON.stringify(synthTemplate({ ` +
      `context: JSON.parse(process.argv[2]) }).toJSON()));\n`,
  );
  const json = execFileSync(process.execPath, ["--import", "tsx", script, JSON.stringify({ stage: "bench", mongodbDb })], {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const template = Template.fromJSON(JSON.parse(json));
  const functions = functionsOf(template, () => "");
  for (const [name, fn] of Object.entries(functions)) {
    fn.codeDirectory = join(dir, "bundles", name);
    mkdirSync(fn.codeDirectory, { recursive: true });
    execFileSync(process.execPath, ["--import", "tsx", "infra/bundling/bundle-function.ts", `functions/${name}.ts`, fn.codeDirectory], {
      cwd: dir,
      stdio: "inherit",
    });
  }
  return { label: `before (${commit})`, template, functions };
}

async function start(variant: Variant, name: string, services: Record<string, string>, nodePath: string): Promise<FunctionProcess> {
  const artifact: FunctionArtifact = resolveReferences(variant.functions[name], variant.template, (_id, resource) => {
    if (resource.Type === "AWS::SecretsManager::Secret") {
      const secret = CREDENTIAL_SECRET_NAMES.find((n) => String(resource.Properties.Name).endsWith(`/threadwise/${CREDENTIAL_SECRETS[n].name}`));
      // The former single secret held every key; it stands in the database secret's place.
      return variant.aws.secretArns[secret ?? "database"];
    }
    if (resource.Type === "AWS::SQS::Queue") return variant.aws.queueUrl;
    return undefined;
  });
  return FunctionProcess.start(artifact, {
    nodePath,
    services: { ...services, AWS_ENDPOINT_URL_SECRETS_MANAGER: variant.aws.url, AWS_ENDPOINT_URL_SQS: variant.aws.url },
  });
}

/**
 * Runs `work`, sampling the proxy's open connections: the most at once, and those still held after,
 * both over what was open before it started (connections of a container already gone may take a
 * moment to close).
 */
async function connectionsDuring<T>(proxy: TcpProxy, work: () => Promise<T>): Promise<{ result: T; peak: number; held: number }> {
  const baseline = proxy.open;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, proxy.open)), 1);
  try {
    const result = await work();
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { result, peak: Math.max(peak, proxy.open) - baseline, held: proxy.open - baseline };
  } finally {
    clearInterval(sampler);
  }
}

async function stopped(fn: FunctionProcess, proxy: TcpProxy): Promise<void> {
  await fn.stop();
  for (let i = 0; i < 250 && proxy.open > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  if (proxy.open > 0) process.stderr.write(`${proxy.open} connections still open after ${fn.artifact.functionName} stopped\n`);
}

type Http = { statusCode: number | string; body?: string };

/** The answer's status, or the function error Lambda would report (an init failure, a timeout) in its place. */
const orError = (invocation: Promise<Http>): Promise<Http> => invocation.catch((error: Error) => ({ statusCode: error.message }));

async function main(): Promise<void> {
  const options = { before: { type: "string" }, "freeze-seconds": { type: "string" }, write: { type: "boolean", default: false } } as const;
  const { values } = parseCliArgs(optionsUsage("bench:mongodb", options), { options });
  const commit = values.before ?? DEFAULT_BEFORE;
  const freezeSeconds = Number(values["freeze-seconds"] ?? DEFAULT_FREEZE_SECONDS);

  const mongo = await startEmbeddedMongo();
  const proxy = await startTcpProxy(Number(new URL(mongo.uri.replace("mongodb://", "http://")).port), { tls: true });
  const converse = await startConverseEndpoint({ respond: (request) => ({ text: `answer to: ${lastUserText(request)}` }) });
  const nodePath = runtimeSdkDirectory();
  const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true&tls=true&tlsCAFile=${LOOPBACK_TLS.certFile}`;
  // The template's functions seal contents with KMS (CONTENT_KEYS=kms): tenants' keys are made in the KMS stand-in.
  const kms = await startKmsKeysEndpoint();
  const services = { AWS_ENDPOINT_URL_BEDROCK_RUNTIME: converse.url, AWS_ENDPOINT_URL_KMS: kms.url };
  const channelKeys = { slackSigningSecret: TEST_SLACK_SIGNING_SECRET, slackBotToken: "xoxb-bench" };

  const old = before(commit, "bench_before");
  const oldAws = await startLocalAws();
  // The former stack read one secret with every key; here it is the database secret's ARN.
  oldAws.setSecretString("database", JSON.stringify({ mongodbUri: uri, ...channelKeys }));
  const current = synthesizeDeployedStack({ stage: "bench", mongodbDb: "bench_after" });
  const newAws = await startLocalAws();
  newAws.setCredentials({ mongodbUri: uri, ...channelKeys });
  const variants: Variant[] = [
    { ...old, aws: oldAws },
    { label: "after", ...current, aws: newAws },
  ];

  const rows: string[] = [];
  const freezeRows: string[] = [];
  for (const variant of variants) {
    if (variant.functions.setup) {
      // As deployed: the custom resource sets the database up before the api serves.
      const setup = await start(variant, "setup", services, nodePath);
      await setup.invoke({});
      await stopped(setup, proxy);
    }

    const api = await start(variant, "api", services, nodePath);
    const invokeApi = (input: Parameters<typeof apiEvent>[0]) => orError(api.invoke<Http>(apiEvent(input)));
    const turn = await connectionsDuring(proxy, async () => {
      const created = await invokeApi({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
      const id = (JSON.parse(created.body ?? "{}") as { conversationId: string }).conversationId;
      return invokeApi({
        method: "POST",
        path: `/v1/conversations/${id}/messages`,
        routeKey: "POST /v1/conversations/{id}/messages",
        claims: alice,
        body: { content: "hello" },
      });
    });
    rows.push(`| ${variant.label} | api: cold start, a conversation and one turn (${turn.result.statusCode}) | ${turn.peak} | ${turn.held} |`);
    process.stderr.write(`${rows.at(-1)}\n`);

    await stopped(api, proxy);

    // Each freeze in a container of its own, warm, idle a moment, then frozen as Lambda freezes it.
    for (const seconds of [freezeSeconds, SHORT_FREEZE_SECONDS]) {
      const container = await start(variant, "api", services, nodePath);
      const list = () =>
        orError(container.invoke<Http>(apiEvent({ method: "GET", path: "/v1/conversations", routeKey: "GET /v1/conversations", claims: alice })));
      await list();
      await list();
      container.freeze();
      proxy.dropSilently();
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      container.thaw();
      const started = performance.now();
      const outcome = String((await list()).statusCode);
      const elapsed = Math.round(performance.now() - started);
      freezeRows.push(`| ${variant.label} | ${seconds} s | ${outcome} | ${elapsed} ms |`);
      process.stderr.write(`${freezeRows.at(-1)}\n`);
      if (outcome.startsWith("Runtime.Exit")) process.stderr.write(`${container.output.slice(-15).join("\n")}\n`);
      await stopped(container, proxy);
    }

    const slack = await start(variant, "slack", services, nodePath);
    const body = envelope(appMention({ text: "<@U0BOT> hello" }));
    const event = await connectionsDuring(proxy, () =>
      orError(slack.invoke<Http>(apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, headers: signSlackRequest(body) }))),
    );
    rows.push(`| ${variant.label} | slack: cold start and one signed mention (${event.result.statusCode}) | ${event.peak} | ${event.held} |`);
    await stopped(slack, proxy);
    const cold = await start(variant, "slack", services, nodePath);
    const refused = await connectionsDuring(proxy, () =>
      orError(
        cold.invoke<Http>(
          apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, headers: signSlackRequest(body, { secret: "wrong" }) }),
        ),
      ),
    );
    await stopped(cold, proxy);
    rows.push(`| ${variant.label} | slack: cold start and one wrongly signed request (${refused.result.statusCode}) | ${refused.peak} | ${refused.held} |`);
  }

  await Promise.all([oldAws.close(), newAws.close(), converse.close(), kms.close()]);
  await proxy.close();
  await mongo.stop();

  const report = [
    "# MongoDB from Lambda",
    "",
    `Generated by \`npm run bench:mongodb\` (Node 22 processes from cdk.out bundles, embedded MongoDB (one ` +
      `standalone server) behind a TLS proxy; before = commit ${commit}).`,
    "",
    "Connections to MongoDB one container opens (peak) and keeps open while idle (held):",
    "",
    "| code | container | peak | held |",
    "|---|---|---:|---:|",
    ...rows,
    "",
    `A standalone server has one monitoring connection per container. Against a replica set each container holds ` +
      `one per member (in Lambda the driver monitors by polling, before as after): with Atlas's three, add two to ` +
      `every figure above. An M10 allows ${M10_CONNECTIONS.toLocaleString("en")}.`,
    "",
    "First request (GET /v1/conversations) after the warm api container was frozen and every open connection was dropped silently, then thawed:",
    "",
    "| code | frozen for | answer | time |",
    "|---|---|---|---:|",
    ...freezeRows,
    "",
  ].join("\n");
  process.stdout.write(report);
  if (values.write) await writeResults({ "mongodb-lambda.md": report });
}

await main();
