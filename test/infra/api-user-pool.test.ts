import { App } from "aws-cdk-lib";
import type { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { USER_POOL_MIN_PASSWORD_LENGTH } from "../../infra/constructs/api-user-pool.js";
import { readStageConfig } from "../../infra/stage-config.js";
import { COGNITO_TENANT_CLAIM, USER_POOL_OUTPUTS } from "../../lib/config/user-pool.js";
import { synthTemplate } from "./synth.js";

const prodContext = { stage: "prod", alarmEmails: "oncall@example.com" };

function only(template: Template, type: string): [string, { Properties: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string }] {
  const found = Object.entries(template.findResources(type));
  expect(found, type).toHaveLength(1);
  return found[0] as [string, { Properties: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string }];
}

/** The environment of every function, by its name. */
function environments(template: Template): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.values(template.findResources("AWS::Lambda::Function")).map((f) => [String(f.Properties.FunctionName), f.Properties.Environment.Variables]),
  );
}

describe("the default issuer: a Cognito user pool when the stage has no jwtIssuer", () => {
  const dev = synthTemplate();
  const [poolId, pool] = only(dev, "AWS::Cognito::UserPool");
  const [clientId, client] = only(dev, "AWS::Cognito::UserPoolClient");
  const issuer = { "Fn::GetAtt": [poolId, "ProviderURL"] };

  it("creates a pool only administrators add users to, with a strong password policy and no way for users to change their tenant", () => {
    expect(pool.Properties).toMatchObject({
      UserPoolName: "dev-threadwise",
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      Policies: {
        PasswordPolicy: {
          MinimumLength: USER_POOL_MIN_PASSWORD_LENGTH,
          RequireLowercase: true,
          RequireUppercase: true,
          RequireNumbers: true,
          RequireSymbols: true,
        },
      },
      Schema: [{ Name: "tenant", AttributeDataType: "String", Mutable: true }],
    });
    expect(client.Properties.WriteAttributes).toEqual([]);
  });

  it("creates a public app client: USER_PASSWORD_AUTH and SRP (and refresh), no secret, no OAuth flows", () => {
    expect(client.Properties.UserPoolId).toEqual({ Ref: poolId });
    expect([...(client.Properties.ExplicitAuthFlows as string[])].sort()).toEqual([
      "ALLOW_REFRESH_TOKEN_AUTH",
      "ALLOW_USER_PASSWORD_AUTH",
      "ALLOW_USER_SRP_AUTH",
    ]);
    expect(client.Properties.GenerateSecret).toBe(false);
    expect(client.Properties.AllowedOAuthFlows).toBeUndefined();
    expect(client.Properties.AllowedOAuthFlowsUserPoolClient).toBe(false);
    expect(client.Properties.PreventUserExistenceErrors).toBe("ENABLED");
  });

  it("names the pool, the client and the issuer in the outputs npm run token reads", () => {
    const outputs = dev.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(outputs[USER_POOL_OUTPUTS.userPoolId]!.Value).toEqual({ Ref: poolId });
    expect(outputs[USER_POOL_OUTPUTS.clientId]!.Value).toEqual({ Ref: clientId });
    expect(outputs[USER_POOL_OUTPUTS.issuer]!.Value).toEqual(issuer);
  });

  it("makes the pool the issuer and its client the audience of the API Gateway authorizer and of every function's own verification", () => {
    const [, authorizer] = only(dev, "AWS::ApiGatewayV2::Authorizer");
    expect(authorizer.Properties.JwtConfiguration).toEqual({ Issuer: issuer, Audience: [{ Ref: clientId }] });
    const envs = environments(dev);
    expect(Object.keys(envs)).toHaveLength(6);
    for (const [name, env] of Object.entries(envs)) {
      expect({ name, iss: env.JWT_ISSUER, aud: env.JWT_AUDIENCE, tenant: env.JWT_TENANT_CLAIM, required: env.JWT_REQUIRE_TENANT }).toEqual({
        name,
        iss: issuer,
        aud: { Ref: clientId },
        tenant: COGNITO_TENANT_CLAIM,
        // The authorizer accepts the pool's access tokens, which carry no tenant: the functions refuse them.
        required: "true",
      });
    }
  });

  it("deletes the pool with a stage that does not keep its data", () => {
    expect([pool.DeletionPolicy, pool.UpdateReplacePolicy, pool.Properties.DeletionProtection]).toEqual(["Delete", "Delete", "INACTIVE"]);
  });

  it("retains the pool, deletion-protected, in prod, and keeps a jwtTenantClaim given in context over the pool's attribute", () => {
    const prod = synthTemplate({ context: { ...prodContext, jwtTenantClaim: "org" } });
    const [, prodPool] = only(prod, "AWS::Cognito::UserPool");
    expect([prodPool.DeletionPolicy, prodPool.UpdateReplacePolicy, prodPool.Properties.DeletionProtection]).toEqual(["Retain", "Retain", "ACTIVE"]);
    expect(prodPool.Properties.UserPoolName).toBe("prod-threadwise");
    expect(environments(prod)["prod-threadwise-api"]!.JWT_TENANT_CLAIM).toBe("org");
  });
});

describe("a stage with its own jwtIssuer", () => {
  const template = synthTemplate({ context: { jwtIssuer: "https://login.example.com/tenant/v2.0", jwtAudience: "api://threadwise" } });

  it("creates no user pool, no client and no pool outputs", () => {
    expect(template.findResources("AWS::Cognito::UserPool")).toEqual({});
    expect(template.findResources("AWS::Cognito::UserPoolClient")).toEqual({});
    const outputs = Object.keys(template.toJSON().Outputs as object);
    for (const key of Object.values(USER_POOL_OUTPUTS)) expect(outputs).not.toContain(key);
  });

  it("verifies against that issuer and audience, with the functions' default tenant claim", () => {
    const [, authorizer] = only(template, "AWS::ApiGatewayV2::Authorizer");
    expect(authorizer.Properties.JwtConfiguration).toEqual({ Issuer: "https://login.example.com/tenant/v2.0", Audience: ["api://threadwise"] });
    const api = environments(template)["dev-threadwise-api"]!;
    expect([api.JWT_ISSUER, api.JWT_AUDIENCE, api.JWT_TENANT_CLAIM, api.JWT_REQUIRE_TENANT]).toEqual([
      "https://login.example.com/tenant/v2.0",
      "api://threadwise",
      undefined,
      undefined,
    ]);
  });
});

describe("stage-config: jwtAudience and jwtJwksUrl need a jwtIssuer", () => {
  const read = (context: Record<string, unknown>) => readStageConfig(new App({ context }).node);

  it.each([
    ["jwtAudience", { jwtAudience: "api://threadwise" }],
    ["jwtJwksUrl", { jwtJwksUrl: "https://login.example.com/keys" }],
  ])("refuses %s without jwtIssuer, as the pool's client is the audience then", (key, context) => {
    expect(() => read(context)).toThrow(
      expect.objectContaining({
        details: [{ path: key, message: expect.stringContaining("without jwtIssuer the stack's Cognito user pool issues the tokens") }],
      }),
    );
  });

  it("takes them with a jwtIssuer", () => {
    const config = read({ jwtIssuer: "https://login.example.com/", jwtAudience: "a,b", jwtJwksUrl: "https://login.example.com/keys" });
    expect([config.jwtIssuer, config.jwtAudience, config.jwtJwksUrl]).toEqual(["https://login.example.com/", ["a", "b"], "https://login.example.com/keys"]);
  });
});

describe("stage-config: operatorRole and jwtRequireTenant", () => {
  const read = (context: Record<string, unknown>) => readStageConfig(new App({ context }).node);

  it("refuses an operatorRole equal to the tenant-admin role, which would make every tenant's admin an operator", () => {
    expect(() => read({ operatorRole: "threadwise:admin" })).toThrow(
      expect.objectContaining({ details: [{ path: "operatorRole", message: expect.stringContaining("must differ from the tenant-admin role") }] }),
    );
  });

  it("reads another operatorRole and jwtRequireTenant as given", () => {
    expect(read({ operatorRole: "threadwise:operator", jwtRequireTenant: "false" })).toMatchObject({
      operatorRole: "threadwise:operator",
      jwtRequireTenant: false,
    });
  });
});
