import { GetFoundationModelAvailabilityCommand, type BedrockClient } from "@aws-sdk/client-bedrock";
import { ConverseCommand, type BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { GetAccountSettingsCommand, GetFunctionConcurrencyCommand, GetFunctionConfigurationCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import { GetSecretValueCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { MongoClient } from "mongodb";
import { CREDENTIAL_SECRETS, parseCredentials, type CredentialSecretName } from "../config/credentials.js";
import { ValidationError } from "../errors.js";

/** Concurrency Lambda keeps unreserved in every account: reservations may take only what is above it. */
export const LAMBDA_UNRESERVED_MINIMUM = 100;

/** How long preflight waits for MongoDB to answer before it says the database is unreachable. */
export const DEFAULT_PREFLIGHT_MONGODB_TIMEOUT_MS = 5_000;

export interface PreflightOptions {
  /** Where each secret the stage reads is: an imported ARN, or the name the stack gives it. */
  secretIds: Partial<Record<CredentialSecretName, string>>;
  /** What the functions call Converse with (`bedrockModelId`): a model or inference profile id or ARN. */
  modelId: string;
  /** The foundation model behind it, whose Marketplace availability is read. */
  foundationModelId: string;
  secrets: SecretsManagerClient;
  bedrockRuntime: BedrockRuntimeClient;
  bedrock: BedrockClient;
  lambda: LambdaClient;
  /** The reserved concurrency the stack gives each of the stage's functions, by function name (`<stage>-threadwise-<name>`). */
  reservedConcurrency: Record<string, number>;
  /** The stage's functions refuse a MongoDB URI without TLS; so does preflight, unless told otherwise. Default: true. */
  requireTls?: boolean;
  /** Default: {@link DEFAULT_PREFLIGHT_MONGODB_TIMEOUT_MS}. */
  mongodbTimeoutMs?: number;
}

/** One thing a deploy needs that is missing, and exactly what to do about it. */
export interface PreflightProblem {
  check: "credentials" | "secrets" | "mongodb" | "model" | "marketplace" | "concurrency";
  problem: string;
  fix: string;
}

/** A setting the operator chose that leaves something unprotected: reported, not failed (the deploy may go out). */
export interface PreflightNotice {
  check: "encryption";
  /** The stage setting (CDK context) or variable that decides it. */
  setting: string;
  notice: string;
}

export interface ContentEncryptionCheckOptions {
  /** The stage's `contentEncryption` (CDK context): on unless set to off. */
  enabled: boolean;
  /** The deployed functions that read or write contents (`<stage>-threadwise-api`, …): their environment says how they store them. */
  functionNames: readonly string[];
  lambda: LambdaClient;
}

/**
 * Contents stored in clear, said (docs/security.md, "Contents at rest in AWS"): the stage's own
 * `contentEncryption=off`, and each deployed function that stores them so now, by its environment:
 * `CONTENT_ENCRYPTION=off`, or no `CONTENT_KEYS=kms` (a deployment made before contents were sealed
 * in AWS; the next deploy seals new contents, and its set-up encrypts those stored). A function not
 * deployed yet says nothing.
 */
export async function checkContentEncryption(options: ContentEncryptionCheckOptions): Promise<PreflightNotice[]> {
  const notices: PreflightNotice[] = [];
  if (!options.enabled) {
    notices.push({
      check: "encryption",
      setting: "contentEncryption",
      notice:
        "contentEncryption=off: the stage stores conversations' contents in clear; every backup and snapshot holds them, " +
        "and a tenant's erasure cannot crypto-shred them (remove the setting to encrypt them per tenant)",
    });
  }
  for (const functionName of options.functionNames) {
    let variables: Record<string, string>;
    try {
      const out = await options.lambda.send(new GetFunctionConfigurationCommand({ FunctionName: functionName }));
      variables = out.Environment?.Variables ?? {};
    } catch (error) {
      if (nameOf(error) === "ResourceNotFoundException") continue;
      notices.push({
        check: "encryption",
        setting: "CONTENT_ENCRYPTION",
        notice: `how ${functionName} stores contents could not be read (${nameOf(error)}); run preflight with lambda:GetFunctionConfiguration`,
      });
      continue;
    }
    if (variables.CONTENT_ENCRYPTION === "off") {
      notices.push({
        check: "encryption",
        setting: "CONTENT_ENCRYPTION",
        notice: `the deployed ${functionName} stores contents in clear (CONTENT_ENCRYPTION=off)`,
      });
    } else if (variables.CONTENT_KEYS !== "kms") {
      notices.push({
        check: "encryption",
        setting: "CONTENT_KEYS",
        notice: `the deployed ${functionName} stores contents in clear (no CONTENT_KEYS=kms: deployed before contents were sealed in AWS); deploy to seal them`,
      });
    }
  }
  return notices;
}

const nameOf = (error: unknown) => (error instanceof Error ? error.name : "Error");
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * What a deploy of a stage needs, checked from the operator's machine before it goes out (docs/deploying.md,
 * "Preflight"): the secrets' keys filled in and valid, MongoDB reachable with the secret's URI, one
 * Converse call to the stage's model, the model's Marketplace availability to this account, and
 * the account's Lambda concurrency against the stage's reservations. Every check runs whatever the others found; secrets' values are never part of a problem.
 */
export async function runPreflight(options: PreflightOptions): Promise<PreflightProblem[]> {
  // Without credentials every check below fails alike; one line says why instead.
  const missing = await checkCredentials(options.secrets);
  if (missing) return [missing];
  const { problems, mongodbUri } = await checkSecrets(options);
  if (mongodbUri) problems.push(...(await checkMongoDb(mongodbUri, options.mongodbTimeoutMs ?? DEFAULT_PREFLIGHT_MONGODB_TIMEOUT_MS)));
  problems.push(...(await checkConverse(options)), ...(await checkMarketplace(options)), ...(await checkConcurrency(options)));
  return problems;
}

/**
 * The stage's reservations must fit the account's concurrency with {@link LAMBDA_UNRESERVED_MINIMUM}
 * left over: what is unreserved now, plus what the stage's own functions already hold (a
 * redeploy moves their reservations, it does not add to them). A new account often has a limit
 * of 10, and the first deploy then fails on the first function.
 */
async function checkConcurrency(options: PreflightOptions): Promise<PreflightProblem[]> {
  const needed = Object.values(options.reservedConcurrency).reduce((sum, n) => sum + n, 0);
  let limit: number;
  let unreserved: number;
  try {
    const { AccountLimit } = await options.lambda.send(new GetAccountSettingsCommand({}));
    limit = AccountLimit?.ConcurrentExecutions ?? 0;
    unreserved = AccountLimit?.UnreservedConcurrentExecutions ?? 0;
  } catch (error) {
    return [
      {
        check: "concurrency",
        problem: `the account's Lambda concurrency could not be read: ${nameOf(error)}`,
        fix: "run preflight with lambda:GetAccountSettings and lambda:GetFunctionConcurrency",
      },
    ];
  }
  let held = 0;
  for (const functionName of Object.keys(options.reservedConcurrency)) {
    try {
      const { ReservedConcurrentExecutions } = await options.lambda.send(new GetFunctionConcurrencyCommand({ FunctionName: functionName }));
      held += ReservedConcurrentExecutions ?? 0;
    } catch (error) {
      // Not deployed yet: it holds nothing.
      if (nameOf(error) !== "ResourceNotFoundException") throw error;
    }
  }
  const available = unreserved + held - LAMBDA_UNRESERVED_MINIMUM;
  if (needed <= available) return [];
  return [
    {
      check: "concurrency",
      problem:
        `the stage reserves ${needed} concurrent executions but the account has ${available} to reserve ` +
        `(limit ${limit}, ${unreserved} unreserved, ${held} held by the stage, ${LAMBDA_UNRESERVED_MINIMUM} always unreserved)`,
      fix:
        `ask for "Concurrent executions" (Service Quotas, AWS Lambda, L-B99A9384) of at least ${limit + needed - available}, ` +
        'or lower workerMaxConcurrency, streamConcurrency, webhookConcurrency or mongodbConnectionBudget (docs/deploying.md, "Sizing")',
    },
  ];
}

/** The operator's AWS credentials, as the SDK's default chain finds them: none found is one problem, named. */
async function checkCredentials(client: SecretsManagerClient): Promise<PreflightProblem | undefined> {
  try {
    await client.config.credentials();
    return undefined;
  } catch (error) {
    return {
      check: "credentials",
      problem: `no AWS credentials found (${nameOf(error)}); preflight reads the stage's secrets and calls its model with yours`,
      fix: "set AWS_PROFILE (after aws sso login or aws configure), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, for the stage's account",
    };
  }
}

async function checkSecrets(options: PreflightOptions): Promise<{ problems: PreflightProblem[]; mongodbUri?: string }> {
  const problems: PreflightProblem[] = [];
  const values: Partial<Record<CredentialSecretName, unknown>> = {};
  for (const [name, id] of Object.entries(options.secretIds) as [CredentialSecretName, string][]) {
    try {
      const { SecretString } = await options.secrets.send(new GetSecretValueCommand({ SecretId: id }));
      values[name] = JSON.parse(SecretString ?? "");
    } catch (error) {
      const fix =
        nameOf(error) === "ResourceNotFoundException"
          ? "deploy the stage first (it creates the secret), or name the existing one in secretArns"
          : nameOf(error) === "SyntaxError"
            ? `store a JSON object with the keys ${CREDENTIAL_SECRETS[name].keys.join(", ")}`
            : "run preflight with credentials that may read it (secretsmanager:GetSecretValue, and kms:Decrypt for a customer key)";
      problems.push({ check: "secrets", problem: `the ${CREDENTIAL_SECRETS[name].name} secret (${id}) could not be read: ${nameOf(error)}`, fix });
    }
  }
  const database = values.database as Record<string, unknown> | undefined;
  if (database && !database.mongodbUri) {
    problems.push({
      check: "secrets",
      problem: `mongodbUri is empty in the database secret (${options.secretIds.database})`,
      fix: "set it to the cluster's connection string (mongodb+srv://user:password@host/), e.g. with aws secretsmanager put-secret-value",
    });
  }
  try {
    const credentials = parseCredentials(values, { requireTls: options.requireTls ?? true });
    return { problems, mongodbUri: credentials.mongodbUri };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    for (const detail of error.details ?? [{ path: "secrets", message: error.message }]) {
      problems.push({
        check: "secrets",
        problem: `${detail.path}: ${detail.message}`,
        fix: 'correct this key in its secret (docs/deploying.md, "The credentials secrets")',
      });
    }
    return { problems };
  }
}

/** The hosts of a MongoDB URI, without its user or password: what follows the last `@` (a password may hold an unescaped `@` or `/`). */
function hostsOf(uri: string): string {
  const authority = uri.replace(/^mongodb(?:\+srv)?:\/\//, "");
  const hosts = /^[^/?]+/.exec(authority.slice(authority.lastIndexOf("@") + 1))?.[0];
  return hosts && authority !== uri ? hosts : "the URI's hosts";
}

async function checkMongoDb(uri: string, timeoutMs: number): Promise<PreflightProblem[]> {
  let client: MongoClient;
  try {
    client = new MongoClient(uri, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs });
  } catch (error) {
    // The driver's parse errors quote the whole URI, password included: name the error, never its message.
    return [
      {
        check: "mongodb",
        problem: `the database secret's mongodbUri cannot be parsed (${nameOf(error)})`,
        fix: "copy the connection string from Atlas (Connect › Drivers) and percent-encode any @ : / ? # in the user and password",
      },
    ];
  }
  try {
    await client.db().command({ ping: 1 });
    return [];
  } catch (error) {
    const auth = nameOf(error) === "MongoServerError" && /auth/i.test(messageOf(error));
    return [
      {
        check: "mongodb",
        problem: `MongoDB at ${hostsOf(uri)} did not accept the database secret's URI (${nameOf(error)})`,
        fix: auth
          ? "check the user and password in mongodbUri, and that the user may read and write the stage's database"
          : "allow this machine's address and the stage's (NatPublicIps output with vpc=nat) in Atlas's IP access list, and check the host",
      },
    ];
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** Why Bedrock refused, as an operator fixes it: by the error's name, never its text (which is quoted as said). */
function converseFix(error: unknown): string {
  switch (nameOf(error)) {
    case "AccessDeniedException":
      return (
        "grant bedrock:InvokeModel on the model (and the profile) and make one call with a principal that may " +
        "subscribe in AWS Marketplace (aws-marketplace:Subscribe, ViewSubscriptions); see docs/deploying.md, " +
        '"Bedrock model access"'
      );
    case "ResourceNotFoundException":
      return (
        "submit Anthropic's first-use form (Bedrock console, model catalog, the model's page) once for the account " +
        "or organization, or check the model id and region"
      );
    case "ValidationException":
      return "check bedrockModelId: the model must be offered in this region, or use its cross-region inference profile (us., eu., global.)";
    case "ThrottlingException":
    case "ServiceQuotaExceededException":
      return "raise the model's tokens- and requests-per-minute quotas in Service Quotas";
    case "CredentialsProviderError":
      return "run preflight with AWS credentials of the stage's account (AWS_PROFILE)";
    default:
      return "read the message, and check the region and bedrockModelId";
  }
}

async function checkConverse(options: PreflightOptions): Promise<PreflightProblem[]> {
  try {
    await options.bedrockRuntime.send(
      new ConverseCommand({
        modelId: options.modelId,
        messages: [{ role: "user", content: [{ text: "Preflight: reply with ok." }] }],
        inferenceConfig: { maxTokens: 8 },
      }),
    );
    return [];
  } catch (error) {
    return [{ check: "model", problem: `Converse with ${options.modelId} was refused: ${nameOf(error)} (${messageOf(error)})`, fix: converseFix(error) }];
  }
}

async function checkMarketplace(options: PreflightOptions): Promise<PreflightProblem[]> {
  const model = options.foundationModelId;
  let availability;
  try {
    availability = await options.bedrock.send(new GetFoundationModelAvailabilityCommand({ modelId: model }));
  } catch (error) {
    return [
      {
        check: "marketplace",
        problem: `the availability of ${model} could not be read: ${nameOf(error)}`,
        fix: nameOf(error) === "AccessDeniedException" ? "run preflight with bedrock:GetFoundationModelAvailability" : "check the model id and region",
      },
    ];
  }
  const problems: PreflightProblem[] = [];
  if (availability.regionAvailability !== "AVAILABLE") {
    problems.push({
      check: "marketplace",
      problem: `${model} is not offered in this region`,
      fix: "deploy to a region that offers it, or use its cross-region inference profile",
    });
  }
  if (availability.authorizationStatus !== "AUTHORIZED") {
    problems.push({
      check: "marketplace",
      problem: `${model} is not authorized for this account (${availability.authorizationStatus})`,
      fix: "check IAM and Service Control Policies that deny the model to the account",
    });
  }
  if (availability.agreementAvailability?.status !== "AVAILABLE") {
    const said = availability.agreementAvailability?.errorMessage ? `: ${availability.agreementAvailability.errorMessage}` : "";
    problems.push({
      check: "marketplace",
      problem: `the Marketplace agreement for ${model} is ${availability.agreementAvailability?.status ?? "missing"}${said}`,
      fix:
        "for an Anthropic model submit the first-use form; then make one call with a principal allowed " +
        "aws-marketplace:Subscribe, and check that the account has a valid payment method",
    });
  }
  if (availability.entitlementAvailability !== "AVAILABLE") {
    problems.push({
      check: "marketplace",
      problem: `the account is not entitled to ${model} yet (${availability.entitlementAvailability})`,
      fix:
        "the first call by a principal allowed aws-marketplace:Subscribe subscribes the account (preflight's " +
        "Converse call is one): run preflight again in two minutes",
    });
  }
  return problems;
}
