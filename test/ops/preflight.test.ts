import { BedrockClient } from "@aws-sdk/client-bedrock";
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { checkContentEncryption, runPreflight, type PreflightOptions } from "../../lib/ops/index.js";
import { startLocalAws, TEST_REGION, type LocalAws } from "../functions/support/aws-endpoints.js";
import { startBedrockControlEndpoint, SUBSCRIBED, type BedrockControlEndpoint } from "../support/bedrock-control-endpoint.js";
import { startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { startLambdaControlEndpoint, type LambdaControlEndpoint } from "../support/lambda-control-endpoint.js";
import { mongoUri } from "../support/mongo.js";

const MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0";
const FOUNDATION_MODEL = "anthropic.claude-sonnet-4-20250514-v1:0";
const credentials = { accessKeyId: "AKIDLOCALTEST", secretAccessKey: "local-test-secret" };

let aws: LocalAws;
let converse: ConverseEndpoint;
let control: BedrockControlEndpoint;
let lambda: LambdaControlEndpoint;
let clients: Pick<PreflightOptions, "secrets" | "bedrockRuntime" | "bedrock" | "lambda">;
/** A dev stage's reservations with the default context: 80 in all (infra/connection-budget.ts). */
const RESERVED = {
  "dev-threadwise-api": 39,
  "dev-threadwise-worker": 10,
  "dev-threadwise-slack": 10,
  "dev-threadwise-teams": 10,
  "dev-threadwise-setup": 1,
  "dev-threadwise-stream": 10,
};

beforeAll(async () => {
  aws = await startLocalAws();
  converse = await startConverseEndpoint();
  control = await startBedrockControlEndpoint();
  lambda = await startLambdaControlEndpoint();
  clients = {
    lambda: new LambdaClient({ endpoint: lambda.url, region: TEST_REGION, credentials }),
    secrets: new SecretsManagerClient({ endpoint: aws.url, region: TEST_REGION, credentials }),
    bedrockRuntime: new BedrockRuntimeClient({ endpoint: converse.url, region: TEST_REGION, credentials }),
    bedrock: new BedrockClient({ endpoint: control.url, region: TEST_REGION, credentials }),
  };
});
afterAll(async () => {
  await Promise.all([aws?.close(), converse?.close(), control?.close(), lambda?.close()]);
});
beforeEach(() => {
  aws.setCredentials({ mongodbUri: mongoUri(), slackSigningSecret: "signing", slackBotToken: "xoxb-preflight" });
  converse.setResponder(() => ({ text: "ok" }));
  control.setAvailability(SUBSCRIBED);
  lambda.setAccount({ concurrentExecutions: 1000, unreservedConcurrentExecutions: 1000 });
  lambda.setReservations({});
  lambda.setEnvironments({});
});

/** Preflight of a stage whose secrets are the local endpoint's, without TLS (the embedded MongoDB has none). */
const preflight = (overrides: Partial<PreflightOptions> = {}) =>
  runPreflight({
    secretIds: { database: aws.secretArns.database, slackSigning: aws.secretArns.slackSigning, channelReplies: aws.secretArns.channelReplies },
    modelId: MODEL,
    foundationModelId: FOUNDATION_MODEL,
    requireTls: false,
    mongodbTimeoutMs: 1_000,
    reservedConcurrency: RESERVED,
    ...clients,
    ...overrides,
  });

describe("runPreflight", () => {
  it("returns one problem naming the missing AWS credentials, and checks nothing else, when the SDK finds none", async () => {
    const none = async () => {
      throw Object.assign(new Error("Could not load credentials from any providers"), { name: "CredentialsProviderError" });
    };
    const calls = converse.requests.length;
    const problems = await preflight({ secrets: new SecretsManagerClient({ endpoint: aws.url, region: TEST_REGION, credentials: none }) });
    expect(problems).toEqual([
      {
        check: "credentials",
        problem: expect.stringMatching(/^no AWS credentials found \(CredentialsProviderError\)/),
        fix: expect.stringContaining("AWS_PROFILE"),
      },
    ]);
    expect(converse.requests.length).toBe(calls);
  });

  it("returns no problem when the secrets are filled in, MongoDB answers, the model answers and the account may use it", async () => {
    const calls = converse.requests.length;
    expect(await preflight()).toEqual([]);
    expect(converse.requests.slice(calls).map((r) => r.modelId)).toEqual([MODEL]);
    expect(control.asked.at(-1)).toBe(FOUNDATION_MODEL);
  });

  it("returns an empty mongodbUri, naming its secret, and tries no database", async () => {
    aws.setCredentials({ slackSigningSecret: "signing", slackBotToken: "xoxb-preflight" });
    expect(await preflight()).toEqual([
      {
        check: "secrets",
        problem: `mongodbUri is empty in the database secret (${aws.secretArns.database})`,
        fix: expect.stringContaining("connection string"),
      },
    ]);
  });

  it("returns a URI without TLS as a problem when the stage requires TLS, as its functions do", async () => {
    expect(await preflight({ requireTls: true })).toEqual([
      { check: "secrets", problem: "mongodbUri: must use TLS (mongodb+srv:// or tls=true)", fix: expect.any(String) },
    ]);
  });

  it("returns a secret that does not exist, with what to do", async () => {
    const problems = await preflight({ secretIds: { database: "prod/threadwise/missing" } });
    expect(problems[0]).toEqual({
      check: "secrets",
      problem: expect.stringContaining("could not be read: ResourceNotFoundException"),
      fix: expect.stringContaining("deploy the stage first"),
    });
  });

  it("returns MongoDB unreachable, naming its host but never the URI's password", async () => {
    aws.setCredentials({ mongodbUri: "mongodb://admin:hunter2@127.0.0.1:1/?directConnection=true" });
    const problems = await preflight();
    expect(problems).toEqual([
      { check: "mongodb", problem: expect.stringMatching(/^MongoDB at 127\.0\.0\.1:1 did not accept/), fix: expect.stringContaining("IP access list") },
    ]);
    expect(JSON.stringify(problems)).not.toContain("hunter2");
  });

  it("returns MongoDB unreachable by its host, never part of a password that holds an unescaped @", async () => {
    aws.setCredentials({ mongodbUri: "mongodb://admin:hun@ter2@127.0.0.1:1/?directConnection=true" });
    const problems = await preflight();
    expect(problems).toEqual([
      { check: "mongodb", problem: expect.stringMatching(/^MongoDB at 127\.0\.0\.1:1 did not accept/), fix: expect.stringContaining("IP access list") },
    ]);
    expect(JSON.stringify(problems)).not.toMatch(/hun|ter2/);
  });

  it("returns a URI the driver cannot parse as a problem, never rejecting with the URI and its password in the message", async () => {
    aws.setCredentials({ mongodbUri: "mongodb://admin:hunter2@/threadwise" });
    const problems = await preflight();
    expect(problems).toEqual([
      { check: "mongodb", problem: "the database secret's mongodbUri cannot be parsed (MongoParseError)", fix: expect.stringContaining("connection string") },
    ]);
    expect(JSON.stringify(problems)).not.toContain("hunter2");
  });

  it("returns the model's AccessDeniedException with the grants and the Marketplace subscription to make", async () => {
    converse.setResponder(() => ({
      error: { status: 403, type: "AccessDeniedException", message: "You don't have access to the model with the specified model ID." },
    }));
    expect(await preflight()).toEqual([
      {
        check: "model",
        problem: expect.stringContaining(`Converse with ${MODEL} was refused: AccessDeniedException`),
        fix: expect.stringContaining("aws-marketplace:Subscribe"),
      },
    ]);
  });

  it("returns Anthropic's first-use form when Bedrock says the use case was not submitted", async () => {
    converse.setResponder(() => ({
      error: { status: 404, type: "ResourceNotFoundException", message: "Model use case details have not been submitted for this account." },
    }));
    expect((await preflight())[0]).toMatchObject({ check: "model", fix: expect.stringContaining("first-use form") });
  });

  it("returns each missing part of the account's Marketplace availability", async () => {
    control.setAvailability({
      ...SUBSCRIBED,
      agreementAvailability: { status: "NOT_AVAILABLE", errorMessage: "no agreement" },
      entitlementAvailability: "NOT_AVAILABLE",
    });
    expect((await preflight()).map((p) => [p.check, p.problem])).toEqual([
      ["marketplace", `the Marketplace agreement for ${FOUNDATION_MODEL} is NOT_AVAILABLE: no agreement`],
      ["marketplace", `the account is not entitled to ${FOUNDATION_MODEL} yet (NOT_AVAILABLE)`],
    ]);
  });

  it("returns the account's concurrency as too small for the stage's reservations plus the 100 Lambda keeps, with the quota to ask for", async () => {
    // A new account: 10 concurrent executions, all unreserved.
    lambda.setAccount({ concurrentExecutions: 10, unreservedConcurrentExecutions: 10 });
    expect(await preflight()).toEqual([
      {
        check: "concurrency",
        problem:
          "the stage reserves 80 concurrent executions but the account has -90 to reserve " +
          "(limit 10, 10 unreserved, 0 held by the stage, 100 always unreserved)",
        fix: expect.stringContaining('"Concurrent executions" (Service Quotas, AWS Lambda, L-B99A9384) of at least 180'),
      },
    ]);
  });

  it("returns no concurrency problem when the stage fits, counting what its deployed functions already hold", async () => {
    lambda.setAccount({ concurrentExecutions: 180, unreservedConcurrentExecutions: 180 });
    expect(await preflight()).toEqual([]);
    // Deployed: its 80 are reserved already, 100 unreserved; a redeploy moves them, it adds nothing.
    lambda.setAccount({ concurrentExecutions: 180, unreservedConcurrentExecutions: 100 });
    lambda.setReservations(RESERVED);
    expect(await preflight()).toEqual([]);
    lambda.setAccount({ concurrentExecutions: 179, unreservedConcurrentExecutions: 99 });
    expect((await preflight()).map((p) => p.check)).toEqual(["concurrency"]);
  });
});

describe("checkContentEncryption", () => {
  const SEALING = ["dev-threadwise-api", "dev-threadwise-worker"];
  const check = (enabled: boolean) => checkContentEncryption({ enabled, functionNames: SEALING, lambda: clients.lambda });
  const sealed = { CONTENT_ENCRYPTION: "on", CONTENT_KEYS: "kms" };

  it("returns nothing for a stage with encryption on whose functions seal with KMS, or are not deployed yet", async () => {
    expect(await check(true)).toEqual([]);
    lambda.setEnvironments({ "dev-threadwise-api": sealed, "dev-threadwise-worker": sealed });
    expect(await check(true)).toEqual([]);
  });

  it("returns a notice naming contentEncryption when the stage turns it off", async () => {
    expect(await check(false)).toEqual([{ check: "encryption", setting: "contentEncryption", notice: expect.stringContaining("contentEncryption=off") }]);
  });

  it("returns each deployed function that stores contents in clear: CONTENT_ENCRYPTION=off, or deployed before it sealed with KMS", async () => {
    lambda.setEnvironments({ "dev-threadwise-api": { CONTENT_ENCRYPTION: "off" }, "dev-threadwise-worker": { STAGE: "dev" } });
    expect(await check(true)).toEqual([
      { check: "encryption", setting: "CONTENT_ENCRYPTION", notice: "the deployed dev-threadwise-api stores contents in clear (CONTENT_ENCRYPTION=off)" },
      {
        check: "encryption",
        setting: "CONTENT_KEYS",
        notice: expect.stringContaining("the deployed dev-threadwise-worker stores contents in clear (no CONTENT_KEYS=kms"),
      },
    ]);
  });

  it("returns a notice naming the permission when a function's configuration cannot be read", async () => {
    const unsigned = new LambdaClient({ endpoint: lambda.url, region: TEST_REGION, credentials, signer: { sign: async (r) => r } });
    const notices = await checkContentEncryption({ enabled: true, functionNames: ["dev-threadwise-api"], lambda: unsigned });
    expect(notices).toEqual([{ check: "encryption", setting: "CONTENT_ENCRYPTION", notice: expect.stringContaining("lambda:GetFunctionConfiguration") }]);
  });
});
