import { parseArgs } from "node:util";
import { enforceNodeVersion } from "./node-version.js";

enforceNodeVersion({ quiet: true });

const USAGE = [
  "usage: npm run token -- <user> [--tenant <tenant>] [--roles a,b] [--ttl 12h]",
  "       npm run token -- --cognito (--stack <name> | --user-pool-id <id> --client-id <id>) <user> --password <password>",
  "                        [--create-user [--tenant <tenant>]] [--region <region>]",
].join("\n");
const HELP = [
  USAGE,
  "Mints a token the local server accepts (valid for 12h unless --ttl says otherwise).",
  "With --cognito, signs <user> in to the stage's Cognito user pool (USER_PASSWORD_AUTH) and prints its ID token, whose",
  "audience is the pool's app client, for `npm run smoke`. --stack reads the pool and client from the stack's outputs;",
  "--create-user creates the user, or finds it, and sets its password (and tenant): both need AWS credentials.",
].join("\n");
/** The lifetimes jose accepts, in the forms worth telling a user about. */
const TTL = /^\d+(\.\d+)? ?(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)$/i;

/** Prints one line and exits: usage mistakes never show a stack trace. */
function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

const { positionals, values } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        tenant: { type: "string" },
        roles: { type: "string" },
        ttl: { type: "string" },
        cognito: { type: "boolean" },
        stack: { type: "string" },
        "user-pool-id": { type: "string" },
        "client-id": { type: "string" },
        region: { type: "string" },
        password: { type: "string" },
        "create-user": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    // Node's message goes on to explain `--`; its first sentence names the mistake.
    return fail(`error: ${(error as Error).message.split(". ")[0]}`);
  }
})();
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const user = positionals[0];
if (!user) fail("error: name the user the token is for");
if (positionals.length > 1) fail(`error: one user only, got ${positionals.length}`);
if (values.tenant === "") fail("error: --tenant is empty");

if (values.cognito) {
  await cognitoToken(user);
} else {
  const cognitoOnly = (["stack", "user-pool-id", "client-id", "region", "password", "create-user"] as const).filter((k) => values[k] !== undefined);
  if (cognitoOnly.length > 0) fail(`error: --${cognitoOnly[0]} is for --cognito; without it the token is a local one`);
  if (values.ttl !== undefined && !TTL.test(values.ttl)) fail(`error: --ttl "${values.ttl}" is not a lifetime such as 30m, 12h or 7d`);
  const { loadOrCreateLocalKeys, mintLocalToken } = await import("./local-keys.js");
  const keys = await loadOrCreateLocalKeys();
  console.log(
    await mintLocalToken(keys, {
      user,
      tenant: values.tenant,
      roles: values.roles?.split(",").filter(Boolean),
      expiresIn: values.ttl,
    }),
  );
}

/** `--cognito`: the arguments checked first (exit 2), then the AWS calls, each failure one line (exit 1). */
async function cognitoToken(username: string): Promise<void> {
  if (values.roles !== undefined || values.ttl !== undefined) {
    fail("error: --roles and --ttl are for local tokens; a Cognito token's claims and lifetime are the pool's");
  }
  const poolFlags = values["user-pool-id"] !== undefined || values["client-id"] !== undefined;
  if (values.stack !== undefined && poolFlags) fail("error: --stack or --user-pool-id and --client-id, not both");
  if (values.stack === undefined && (values["user-pool-id"] === undefined || values["client-id"] === undefined)) {
    fail("error: --cognito needs --stack <name>, or --user-pool-id and --client-id");
  }
  if (!values.password) fail("error: --cognito needs --password (the user's; --create-user sets it)");
  if (values.tenant !== undefined && !values["create-user"]) fail("error: --tenant with --cognito needs --create-user, which sets the user's tenant");

  const { awsClients, describeAwsFailure, ensureUser, regionOfUserPool, signIn, userPoolOfStack, CognitoTokenError } = await import("./cognito-token.js");
  const fromFlags = () => {
    const userPoolId = values["user-pool-id"] ?? "";
    try {
      return { userPoolId, clientId: values["client-id"] ?? "", region: values.region ?? regionOfUserPool(userPoolId) };
    } catch (error) {
      if (error instanceof CognitoTokenError) fail(`error: ${error.message}`);
      throw error;
    }
  };
  const flagged = values.stack === undefined ? fromFlags() : undefined;
  try {
    const target = flagged ?? (await userPoolOfStack(awsClients(values.region).cloudFormation, values.stack ?? ""));
    const { cognito } = awsClients(target.region);
    if (values["create-user"]) {
      const outcome = await ensureUser(cognito, target, { username, password: values.password, tenant: values.tenant });
      console.error(`${outcome === "created" ? "created" : "updated"} ${username} in ${target.userPoolId}`);
    }
    console.log((await signIn(cognito, target, username, values.password)).idToken);
  } catch (error) {
    console.error(`error: ${describeAwsFailure(error)}`);
    process.exit(1);
  }
}
