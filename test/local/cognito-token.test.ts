import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { CognitoIdentityProviderClient } from "@aws-sdk/client-cognito-identity-provider";
import { importJWK, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COGNITO_TENANT_CLAIM, USER_POOL_OUTPUTS } from "../../lib/config/user-pool.js";
import { describeAwsFailure, ensureUser, signIn, userPoolOfStack, type UserPoolTarget } from "../../lib/local/cognito-token.js";
import { type CognitoEndpoint, startCognitoEndpoint } from "../support/cognito-endpoint.js";

const PASSWORD = "Smoke-test-password-1";
const credentials = { accessKeyId: "AKIDSTANDIN", secretAccessKey: "stand-in-secret" };

describe("the Cognito token request, through the real SDK clients against a local stand-in", () => {
  let cognito: CognitoEndpoint;
  let target: UserPoolTarget;
  let admin: CognitoIdentityProviderClient;
  /** A client with no credentials at all: the sign-in must not need them. */
  let anonymous: CognitoIdentityProviderClient;

  beforeAll(async () => {
    cognito = await startCognitoEndpoint({
      "dev-threadwise": {
        [USER_POOL_OUTPUTS.userPoolId]: "eu-west-1_StandIn1",
        [USER_POOL_OUTPUTS.clientId]: "3n4b5urk1ft4fl3mg5e1ss1ng0",
        [USER_POOL_OUTPUTS.issuer]: "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_StandIn1",
      },
      "byo-issuer-threadwise": { ApiUrl: "https://api.example.com" },
    });
    target = { userPoolId: cognito.userPoolId, clientId: cognito.clientId, region: "eu-west-1" };
    admin = new CognitoIdentityProviderClient({ region: "eu-west-1", endpoint: cognito.url, credentials, maxAttempts: 1 });
    anonymous = new CognitoIdentityProviderClient({
      region: "eu-west-1",
      endpoint: cognito.url,
      maxAttempts: 1,
      credentials: () => Promise.reject(Object.assign(new Error("Could not load credentials from any providers"), { name: "CredentialsProviderError" })),
    });
  });
  afterAll(() => cognito.close());

  it("reads the pool and client from the stack's outputs, the region from the pool id", async () => {
    const cloudFormation = new CloudFormationClient({ region: "eu-west-1", endpoint: cognito.url, credentials, maxAttempts: 1 });
    expect(await userPoolOfStack(cloudFormation, "dev-threadwise")).toEqual(target);
    expect(cognito.calls.at(-1)).toMatchObject({ operation: "cloudformation:DescribeStacks", body: { StackName: "dev-threadwise" } });
  });

  it("says a stack without the pool's outputs was deployed with its own issuer, and names a missing stack", async () => {
    const cloudFormation = new CloudFormationClient({ region: "eu-west-1", endpoint: cognito.url, credentials, maxAttempts: 1 });
    await expect(userPoolOfStack(cloudFormation, "byo-issuer-threadwise").catch(describeAwsFailure)).resolves.toBe(
      "stack byo-issuer-threadwise has no UserPoolId and UserPoolClientId outputs: it was deployed with -c jwtIssuer, so ask that issuer for a token",
    );
    await expect(userPoolOfStack(cloudFormation, "nope").catch(describeAwsFailure)).resolves.toBe("CloudFormation: Stack with id nope does not exist");
  });

  it("creates the user with a permanent password and tenant, then signs in without credentials for an ID token the API would accept", async () => {
    expect(await ensureUser(admin, target, { username: "smoke", password: PASSWORD, tenant: "acme" })).toBe("created");
    const tokens = await signIn(anonymous, target, "smoke", PASSWORD);
    const { payload } = await jwtVerify(tokens.idToken, await importJWK(cognito.publicJwk, "ES256"), { issuer: cognito.issuer, audience: cognito.clientId });
    expect(payload).toMatchObject({ token_use: "id", [COGNITO_TENANT_CLAIM]: "acme", sub: expect.any(String) });
    expect(tokens.expiresInSeconds).toBe(3600);
    const ops = cognito.calls.filter((c) => !c.operation.startsWith("cloudformation")).map((c) => [c.operation, c.signed]);
    expect(ops.slice(-3)).toEqual([
      ["AdminCreateUser", true],
      ["AdminSetUserPassword", true],
      ["InitiateAuth", false],
    ]);
    expect(cognito.calls.find((c) => c.operation === "AdminCreateUser")?.body).toMatchObject({ MessageAction: "SUPPRESS" });
  });

  it("finds an existing user, updating its tenant and password, so a smoke test's set-up can run again", async () => {
    cognito.addUser("again", "Old-password-0000!", { attributes: { [COGNITO_TENANT_CLAIM]: "old" } });
    expect(await ensureUser(admin, target, { username: "again", password: PASSWORD, tenant: "new" })).toBe("updated");
    const { payload } = await jwtVerify((await signIn(anonymous, target, "again", PASSWORD)).idToken, await importJWK(cognito.publicJwk, "ES256"));
    expect(payload[COGNITO_TENANT_CLAIM]).toBe("new");
  });

  it("refuses a user still on a temporary password with what to do, rather than printing no token", async () => {
    cognito.addUser("fresh", PASSWORD, { permanent: false });
    await expect(signIn(anonymous, target, "fresh", PASSWORD).catch(describeAwsFailure)).resolves.toBe(
      "Cognito asks fresh for NEW_PASSWORD_REQUIRED before a token: set a permanent password with --create-user (and no MFA for a smoke-test user)",
    );
  });

  it.each([
    ["a wrong password", () => signIn(anonymous, target, "smoke", "wrong"), /^Cognito refused the sign-in: Incorrect username or password\./],
    ["another client", () => signIn(anonymous, { ...target, clientId: "other" }, "smoke", PASSWORD), /^Cognito has no such user pool or app client/],
    ["a weak password", () => ensureUser(admin, target, { username: "weak", password: "short" }), /^Cognito refused the password: Password did not conform/],
    ["no credentials for the admin calls", () => ensureUser(anonymous, target, { username: "x", password: PASSWORD }), /^no AWS credentials: /],
  ])("answers %s in one line", async (_name, call, line) => {
    const message = await call().then(
      () => "no error",
      (error: unknown) => describeAwsFailure(error),
    );
    expect(message).toMatch(line);
    expect(message).not.toContain("\n");
  });
});
