/**
 * What the stack and `npm run token -- --cognito` agree on about the Amazon Cognito user pool the
 * stack creates when a stage has no `jwtIssuer` (infra/constructs/api-user-pool.ts, docs/deploying.md).
 */

/** The stack outputs naming the pool, its app client (the tokens' audience) and the issuer. */
export const USER_POOL_OUTPUTS = { userPoolId: "UserPoolId", clientId: "UserPoolClientId", issuer: "JwtIssuer" } as const;

/** The custom attribute holding a user's tenant, which only an administrator may set. */
export const COGNITO_TENANT_ATTRIBUTE = "tenant";
/** The claim a Cognito ID token carries it as, the stage's `JWT_TENANT_CLAIM` unless `jwtTenantClaim` says otherwise. */
export const COGNITO_TENANT_CLAIM = `custom:${COGNITO_TENANT_ATTRIBUTE}`;
