import { enforceNodeVersion } from "./node-version.js";

enforceNodeVersion({ quiet: true });
const { readTokenArgs } = await import("./token-args.js");

const request = readTokenArgs(process.argv.slice(2));
// Usage mistakes are one line and the usage, never a stack trace.
if (request.kind === "help") {
  console.log(request.text);
  process.exit(0);
}
if (request.kind === "mistake") {
  console.error(request.text);
  process.exit(2);
}

if (request.kind === "local") {
  const { loadOrCreateLocalKeys, mintLocalToken } = await import("./local-keys.js");
  const keys = await loadOrCreateLocalKeys();
  console.log(await mintLocalToken(keys, { user: request.user, tenant: request.tenant, roles: request.roles, expiresIn: request.ttl }));
} else {
  // The AWS calls: each failure is one line (exit 1); the token alone goes to stdout.
  const { awsClients, describeAwsFailure, ensureUser, signIn, userPoolOfStack } = await import("./cognito-token.js");
  const { source } = request;
  try {
    const target = "stack" in source ? await userPoolOfStack(awsClients(source.region).cloudFormation, source.stack) : source;
    const { cognito } = awsClients(target.region);
    if (request.createUser) {
      const outcome = await ensureUser(cognito, target, { username: request.user, password: request.password, tenant: request.tenant });
      console.error(`${outcome} ${request.user} in ${target.userPoolId}`);
    }
    console.log((await signIn(cognito, target, request.user, request.password)).idToken);
  } catch (error) {
    console.error(`error: ${describeAwsFailure(error)}`);
    process.exit(1);
  }
}
