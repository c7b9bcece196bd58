import { CfnOutput, Duration, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import { AccountRecovery, ClientAttributes, FeaturePlan, Mfa, StringAttribute, UserPool, type UserPoolClient } from "aws-cdk-lib/aws-cognito";
import { Construct } from "constructs";
import { COGNITO_TENANT_ATTRIBUTE, COGNITO_TENANT_CLAIM, USER_POOL_OUTPUTS } from "../../lib/config/user-pool.js";
import type { StageConfig } from "../stage-config.js";

/** How long an ID token from the pool is valid: a smoke test or a session asks again after it. */
export const USER_POOL_TOKEN_VALIDITY = Duration.hours(1);
/** Shortest password the pool accepts (with upper and lower case, a digit and a symbol). */
export const USER_POOL_MIN_PASSWORD_LENGTH = 12;

export interface ApiUserPoolProps {
  stage: string;
  /** RETAIN in a stage that keeps its data (prod): deleting the stack must not delete its users. */
  removalPolicy: RemovalPolicy;
}

/**
 * The stage's default token issuer when no `jwtIssuer` is given: an Amazon Cognito user pool
 * (`<stage>-threadwise`) and one public app client (no secret: a CLI or a browser signs in with
 * USER_PASSWORD_AUTH or SRP, no OAuth flows). Users are created by an administrator only (no
 * self sign-up), and their tenant is a custom attribute (`custom:tenant` in the ID token) that
 * the client cannot write, so a user cannot move themselves into another tenant. The API checks
 * the ID token: its `aud` is the client id (docs/deploying.md, "Identity: a worked example").
 */
export class ApiUserPool extends Construct {
  readonly userPool: UserPool;
  readonly client: UserPoolClient;
  /** `https://cognito-idp.<region>.amazonaws.com/<pool id>`, the tokens' `iss`, whose OpenID metadata names the keys. */
  readonly issuer: string;

  constructor(scope: Construct, id: string, props: ApiUserPoolProps) {
    super(scope, id);
    const retained = props.removalPolicy === RemovalPolicy.RETAIN;
    this.userPool = new UserPool(this, "Pool", {
      userPoolName: `${props.stage}-threadwise`,
      selfSignUpEnabled: false,
      signInCaseSensitive: false,
      // An administrator resets a password (AdminSetUserPassword); no message channel is configured.
      accountRecovery: AccountRecovery.NONE,
      passwordPolicy: {
        minLength: USER_POOL_MIN_PASSWORD_LENGTH,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      mfa: Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      featurePlan: FeaturePlan.ESSENTIALS,
      customAttributes: { [COGNITO_TENANT_ATTRIBUTE]: new StringAttribute({ minLen: 1, maxLen: 128, mutable: true }) },
      deletionProtection: retained,
      removalPolicy: props.removalPolicy,
    });
    this.client = this.userPool.addClient("Client", {
      userPoolClientName: `${props.stage}-threadwise-api`,
      generateSecret: false,
      authFlows: { userPassword: true, userSrp: true },
      disableOAuth: true,
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
      idTokenValidity: USER_POOL_TOKEN_VALIDITY,
      accessTokenValidity: USER_POOL_TOKEN_VALIDITY,
      refreshTokenValidity: Duration.days(30),
      // Users may read their attributes but write none: the tenant is set by an administrator only.
      writeAttributes: new ClientAttributes(),
    });
    this.issuer = this.userPool.userPoolProviderUrl;

    Validations.of(this.userPool).acknowledge(
      {
        id: "AwsSolutions-COG2",
        reason:
          "MFA is optional, not required: the pool's first users are smoke-test and service users that sign in from a " +
          "CLI with USER_PASSWORD_AUTH (npm run token -- --cognito), which cannot answer an MFA challenge. A pool " +
          "for people should require TOTP, or the stage should use its organisation's issuer (-c jwtIssuer).",
      },
      {
        id: "AwsSolutions-COG8",
        reason:
          "Threat protection needs the Plus feature plan, billed per monthly active user; the default pool is a " +
          "worked example and a smoke-test issuer on the Essentials plan. A stage with real users should bring its " +
          "organisation's issuer (-c jwtIssuer) or raise the plan.",
      },
    );

    new CfnOutput(Stack.of(this), USER_POOL_OUTPUTS.userPoolId, {
      value: this.userPool.userPoolId,
      description: "Cognito user pool issuing the API's tokens (npm run token -- --cognito --stack <this stack> --create-user ...)",
    });
    new CfnOutput(Stack.of(this), USER_POOL_OUTPUTS.clientId, {
      value: this.client.userPoolClientId,
      description: "The pool's public app client: the tokens' audience (aud of the ID token)",
    });
    new CfnOutput(Stack.of(this), USER_POOL_OUTPUTS.issuer, { value: this.issuer, description: "Issuer (iss) the API accepts" });
  }
}

/** Who signs the API's tokens, as the functions and the API Gateway authorizer check them. */
export interface TokenIssuer {
  issuer: string;
  audience: string[];
  /** The claim naming the caller's tenant; unset: the functions' default (`tenant`). */
  tenantClaim?: string;
  /** Whether a token without that claim is refused (`JWT_REQUIRE_TENANT`). */
  requireTenant: boolean;
}

/**
 * The stage's `jwtIssuer` and `jwtAudience`, or, without a `jwtIssuer`, an {@link ApiUserPool} as
 * the issuer, its app client as the audience and the pool's tenant attribute as the tenant claim.
 * With the pool, a token without the tenant is refused unless `jwtRequireTenant` is false: API
 * Gateway's authorizer accepts the pool's access tokens (their `client_id` stands for the absent
 * `aud`), which carry no `custom:tenant`, and would make their users principals of no tenant.
 */
export function apiTokenIssuer(scope: Construct, config: StageConfig, removalPolicy: RemovalPolicy): TokenIssuer {
  if (config.jwtIssuer) {
    return { issuer: config.jwtIssuer, audience: config.jwtAudience, tenantClaim: config.jwtTenantClaim, requireTenant: config.jwtRequireTenant ?? false };
  }
  const pool = new ApiUserPool(scope, "Identity", { stage: config.stage, removalPolicy });
  return {
    issuer: pool.issuer,
    audience: [pool.client.userPoolClientId],
    tenantClaim: config.jwtTenantClaim ?? COGNITO_TENANT_CLAIM,
    requireTenant: config.jwtRequireTenant ?? true,
  };
}
