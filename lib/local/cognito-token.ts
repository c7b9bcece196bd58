import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import {
  AdminCreateUserCommand,
  AdminSetUserPasswordCommand,
  AdminUpdateUserAttributesCommand,
  CognitoIdentityProviderClient,
  InitiateAuthCommand,
  UsernameExistsException,
} from "@aws-sdk/client-cognito-identity-provider";
import { COGNITO_TENANT_CLAIM, USER_POOL_OUTPUTS } from "../config/user-pool.js";
import { regionOfUserPool } from "./token-args.js";

/** The user pool and app client a token comes from. */
export interface UserPoolTarget {
  userPoolId: string;
  clientId: string;
  /** The pool's region: the prefix of its id (`us-east-1_AbC123`). */
  region: string;
}

/** A mistake or a refusal the token command reports in one line (exit 1), never with a stack trace. */
export class CognitoTokenError extends Error {
  override readonly name = "CognitoTokenError";
}

/** The user pool and client named by a stack's outputs (DescribeStacks, which needs AWS credentials). */
export async function userPoolOfStack(cloudFormation: CloudFormationClient, stackName: string): Promise<UserPoolTarget> {
  const { Stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }));
  const outputs = new Map((Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const userPoolId = outputs.get(USER_POOL_OUTPUTS.userPoolId);
  const clientId = outputs.get(USER_POOL_OUTPUTS.clientId);
  if (!userPoolId || !clientId) {
    throw new CognitoTokenError(
      `stack ${stackName} has no ${USER_POOL_OUTPUTS.userPoolId} and ${USER_POOL_OUTPUTS.clientId} outputs: ` +
        "it was deployed with -c jwtIssuer, so ask that issuer for a token",
    );
  }
  const region = regionOfUserPool(userPoolId);
  if (!region) throw new CognitoTokenError(`stack ${stackName}'s ${USER_POOL_OUTPUTS.userPoolId} "${userPoolId}" is not a user pool id`);
  return { userPoolId, clientId, region };
}

/**
 * Creates the user, or finds it, and sets its password, permanent (no first-sign-in challenge),
 * and its tenant when given: what a smoke test needs. Needs AWS credentials allowed the admin calls.
 */
export async function ensureUser(
  cognito: CognitoIdentityProviderClient,
  target: UserPoolTarget,
  user: { username: string; password: string; tenant?: string },
): Promise<"created" | "updated"> {
  const attributes = user.tenant === undefined ? [] : [{ Name: COGNITO_TENANT_CLAIM, Value: user.tenant }];
  let outcome: "created" | "updated" = "created";
  try {
    await cognito.send(
      new AdminCreateUserCommand({ UserPoolId: target.userPoolId, Username: user.username, MessageAction: "SUPPRESS", UserAttributes: attributes }),
    );
  } catch (error) {
    if (!(error instanceof UsernameExistsException)) throw error;
    outcome = "updated";
    if (attributes.length > 0) {
      await cognito.send(new AdminUpdateUserAttributesCommand({ UserPoolId: target.userPoolId, Username: user.username, UserAttributes: attributes }));
    }
  }
  await cognito.send(new AdminSetUserPasswordCommand({ UserPoolId: target.userPoolId, Username: user.username, Password: user.password, Permanent: true }));
  return outcome;
}

export interface CognitoTokens {
  /** What the API takes: its `aud` is the app client id, the audience the stack configures. */
  idToken: string;
  accessToken: string;
  expiresInSeconds: number;
}

/**
 * Signs the user in with USER_PASSWORD_AUTH (InitiateAuth, which needs no AWS credentials: the app
 * client is public, without a secret). A challenge (a temporary password to replace, MFA) is
 * refused with what to do, as a smoke test cannot answer it.
 */
export async function signIn(cognito: CognitoIdentityProviderClient, target: UserPoolTarget, username: string, password: string): Promise<CognitoTokens> {
  const answer = await cognito.send(
    new InitiateAuthCommand({ ClientId: target.clientId, AuthFlow: "USER_PASSWORD_AUTH", AuthParameters: { USERNAME: username, PASSWORD: password } }),
  );
  if (answer.ChallengeName) {
    throw new CognitoTokenError(
      `Cognito asks ${username} for ${answer.ChallengeName} before a token: set a permanent password with --create-user (and no MFA for a smoke-test user)`,
    );
  }
  const result = answer.AuthenticationResult;
  if (!result?.IdToken || !result.AccessToken) throw new CognitoTokenError("Cognito answered without tokens");
  return { idToken: result.IdToken, accessToken: result.AccessToken, expiresInSeconds: result.ExpiresIn ?? 0 };
}

/** What needs AWS credentials, and the usual ways to provide them. */
export const NEEDS_CREDENTIALS =
  "reading the stack and creating the user need them (aws sso login, AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)";

/**
 * One line for a failure of the SDK or of Cognito: missing credentials or region, an unreachable
 * endpoint, and Cognito's own refusals, each named with what to do.
 */
export function describeAwsFailure(error: unknown): string {
  if (error instanceof CognitoTokenError) return error.message;
  const e = error as { name?: string; message?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const message = String(e.message ?? error).split("\n")[0]!;
  switch (e.name) {
    case "CredentialsProviderError":
      return `no AWS credentials: ${NEEDS_CREDENTIALS}`;
    case "NotAuthorizedException":
      return `Cognito refused the sign-in: ${message} (wrong user or password, or the client does not allow USER_PASSWORD_AUTH)`;
    case "UserNotFoundException":
      return `Cognito has no such user: ${message} (create it with --create-user)`;
    case "InvalidPasswordException":
      return `Cognito refused the password: ${message}`;
    case "ResourceNotFoundException":
      return `Cognito has no such user pool or app client: ${message}`;
    case "ValidationError":
      return `CloudFormation: ${message}`;
    case "AccessDeniedException":
    case "AccessDenied":
      return `AWS denied the call: ${message}`;
  }
  if (/region is missing/i.test(message)) return "no AWS region: pass --region or set AWS_REGION (a user pool id names its own)";
  if (e.code === "ECONNREFUSED" || e.code === "ENOTFOUND" || e.code === "ETIMEDOUT") return `AWS could not be reached: ${message}`;
  return `${e.name ?? "error"}: ${message}`;
}

/** The clients the token command uses, in a region, at an endpoint when one is given (a local stand-in in the tests). */
export function awsClients(region: string | undefined, endpoint?: string): { cognito: CognitoIdentityProviderClient; cloudFormation: CloudFormationClient } {
  const options = { ...(region ? { region } : {}), ...(endpoint ? { endpoint } : {}), maxAttempts: 1 };
  return { cognito: new CognitoIdentityProviderClient(options), cloudFormation: new CloudFormationClient(options) };
}
