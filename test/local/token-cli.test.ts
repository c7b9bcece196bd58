import { importJWK, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { COGNITO_TENANT_CLAIM, USER_POOL_OUTPUTS } from "../../lib/config/user-pool.js";
import { runCli } from "../support/cli.js";
import { startCognitoEndpoint } from "../support/cognito-endpoint.js";

describe("token-cli (npm run token): mistakes answered in one line", { timeout: 90_000 }, () => {
  it("prints the usage and exits 0 for --help", async () => {
    const { code, stdout, errors } = await runCli("lib/local/token-cli.ts", ["--help"]);
    expect([code, errors]).toEqual([0, []]);
    expect(stdout).toMatch(/^usage: npm run token -- <user>/);
  });

  it.each([
    [["--ttl", "abc", "alice"], 'error: --ttl "abc" is not a lifetime such as 30m, 12h or 7d'],
    [["--bogus", "alice"], "error: Unknown option '--bogus'"],
    [[], "error: name the user the token is for"],
  ])("exits 2 with what is wrong and the usage for %j", async (args, message) => {
    const { code, errors } = await runCli("lib/local/token-cli.ts", args);
    expect(code).toBe(2);
    expect(errors.slice(0, 2)).toEqual([message, expect.stringMatching(/^usage: /)]);
  });
});

describe("token-cli --cognito: a token from the stage's user pool", { timeout: 90_000 }, () => {
  it("exits 2 with a --cognito mistake and the usage, before any AWS call", async () => {
    const { code, stdout, errors } = await runCli("lib/local/token-cli.ts", ["--cognito", "smoke", "--password", "x"]);
    expect([code, stdout, errors[0]]).toEqual([2, "", "error: --cognito needs --stack <name>, or --user-pool-id and --client-id"]);
    expect(errors[1]).toMatch(/^usage: /);
  });

  it("says in one line that reading the stack needs AWS credentials, when there are none", async () => {
    const { code, stdout, errors } = await runCli("lib/local/token-cli.ts", ["--cognito", "--stack", "dev-threadwise", "smoke", "--password", "x"], {
      AWS_REGION: "eu-west-1",
    });
    expect([code, stdout, errors]).toEqual([
      1,
      "",
      [
        "error: no AWS credentials: reading the stack and creating the user need them " +
          "(aws sso login, AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
      ],
    ]);
  });

  it("says in one line that a region is needed for a stack name", async () => {
    const { code, errors } = await runCli("lib/local/token-cli.ts", ["--cognito", "--stack", "dev-threadwise", "smoke", "--password", "x"]);
    expect([code, errors]).toEqual([1, ["error: no AWS region: pass --region or set AWS_REGION (a user pool id names its own)"]]);
  });

  it("creates the user and prints its ID token, the pool read from the stack, against a stand-in reached by the SDK's endpoint variables", async () => {
    const cognito = await startCognitoEndpoint();
    const stack = { [USER_POOL_OUTPUTS.userPoolId]: cognito.userPoolId, [USER_POOL_OUTPUTS.clientId]: cognito.clientId };
    const standIn = await startCognitoEndpoint({ "dev-threadwise": stack });
    try {
      // CloudFormation from one stand-in and Cognito from the other: each client goes where its own variable points.
      const { code, stdout, errors } = await runCli(
        "lib/local/token-cli.ts",
        [
          "--cognito",
          "--stack",
          "dev-threadwise",
          "smoke",
          "--password",
          "Smoke-test-password-1",
          "--create-user",
          "--tenant",
          "acme",
          "--region",
          "eu-west-1",
        ],
        {
          AWS_ENDPOINT_URL_CLOUDFORMATION: standIn.url,
          AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: cognito.url,
          AWS_ACCESS_KEY_ID: "AKIDSTANDIN",
          AWS_SECRET_ACCESS_KEY: "stand-in-secret",
        },
      );
      expect([code, errors]).toEqual([0, [`created smoke in ${cognito.userPoolId}`]]);
      const { payload } = await jwtVerify(stdout.trim(), await importJWK(cognito.publicJwk, "ES256"), { issuer: cognito.issuer, audience: cognito.clientId });
      expect(payload[COGNITO_TENANT_CLAIM]).toBe("acme");
      expect(standIn.calls.map((c) => c.operation)).toEqual(["cloudformation:DescribeStacks"]);
      expect(cognito.calls.map((c) => c.operation)).toEqual(["AdminCreateUser", "AdminSetUserPassword", "InitiateAuth"]);
    } finally {
      await Promise.all([cognito.close(), standIn.close()]);
    }
  });

  it("signs in with a pool id and client id alone, without AWS credentials, and says a wrong password in one line", async () => {
    const cognito = await startCognitoEndpoint();
    cognito.addUser("smoke", "Smoke-test-password-1");
    try {
      const args = ["--cognito", "--user-pool-id", cognito.userPoolId, "--client-id", cognito.clientId, "smoke", "--password"];
      const env = { AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: cognito.url };
      const good = await runCli("lib/local/token-cli.ts", [...args, "Smoke-test-password-1"], env);
      expect([good.code, good.errors]).toEqual([0, []]);
      await expect(jwtVerify(good.stdout.trim(), await importJWK(cognito.publicJwk, "ES256"), { audience: cognito.clientId })).resolves.toBeDefined();
      const bad = await runCli("lib/local/token-cli.ts", [...args, "wrong"], env);
      expect([bad.code, bad.stdout, bad.errors]).toEqual([
        1,
        "",
        ["error: Cognito refused the sign-in: Incorrect username or password. (wrong user or password, or the client does not allow USER_PASSWORD_AUTH)"],
      ]);
    } finally {
      await cognito.close();
    }
  });
});
