import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";

/** One call the stand-in received: the operation, its JSON body, and whether it was SigV4-signed. */
export interface CognitoCall {
  operation: string;
  body: Record<string, unknown>;
  signed: boolean;
}

export interface CognitoEndpoint {
  url: string;
  userPoolId: string;
  clientId: string;
  /** The issuer the ID tokens name (`https://cognito-idp.<region>.amazonaws.com/<pool id>`). */
  issuer: string;
  /** The key the ID tokens are signed with, to verify them as the API would. */
  publicJwk: JWK;
  calls: CognitoCall[];
  /** Adds a user directly, as an administrator would have; `permanent: false` is a temporary password. */
  addUser(username: string, password: string, options?: { permanent?: boolean; attributes?: Record<string, string> }): void;
  close(): Promise<void>;
}

const TARGET_PREFIX = "AWSCognitoIdentityProviderService.";
const CLOUDFORMATION_NS = "http://cloudformation.amazonaws.com/doc/2010-05-15/";

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** An error as Cognito's JSON 1.1 protocol answers it: the type in a header and in the body. */
function cognitoError(res: ServerResponse, type: string, message: string): void {
  res.writeHead(400, { "content-type": "application/x-amz-json-1.1", "x-amzn-errortype": type });
  res.end(JSON.stringify({ __type: type, message }));
}

const xmlEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * A local stand-in for Amazon Cognito user pools (JSON 1.1, `X-Amz-Target:
 * AWSCognitoIdentityProviderService.<Operation>`) and CloudFormation's DescribeStacks (the Query
 * protocol, XML), enough for `npm run token -- --cognito`: AdminCreateUser, AdminSetUserPassword,
 * AdminUpdateUserAttributes, and InitiateAuth with USER_PASSWORD_AUTH for one public app client.
 * The admin calls are refused unless signed (an AWS credential), InitiateAuth is not; a user with a
 * temporary password gets the NEW_PASSWORD_REQUIRED challenge, as Cognito does. ID tokens are
 * ES256 JWTs with Cognito's claims (`aud` the client id, `token_use: id`, `custom:*` attributes).
 * `stacks` maps a stack name to its outputs.
 */
export async function startCognitoEndpoint(stacks: Record<string, Record<string, string>> = {}): Promise<CognitoEndpoint> {
  const region = "eu-west-1";
  const userPoolId = `${region}_StandIn1`;
  const clientId = "3n4b5urk1ft4fl3mg5e1ss1ng0";
  const issuer = `https://cognito-idp.${region}.amazonaws.com/${userPoolId}`;
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const users = new Map<string, { password: string; permanent: boolean; sub: string; attributes: Record<string, string> }>();
  const calls: CognitoCall[] = [];
  let subjects = 0;
  const addUser: CognitoEndpoint["addUser"] = (username, password, options = {}) => {
    users.set(username, { password, permanent: options.permanent ?? true, sub: `sub-${++subjects}`, attributes: { ...options.attributes } });
  };

  const idToken = (username: string, key: CryptoKey) => {
    const user = users.get(username)!;
    return new SignJWT({ ...user.attributes, token_use: "id", "cognito:username": username })
      .setProtectedHeader({ alg: "ES256", kid: "stand-in" })
      .setIssuer(issuer)
      .setAudience(clientId)
      .setSubject(user.sub)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(key);
  };

  const cognito = async (req: IncomingMessage, res: ServerResponse, operation: string, body: Record<string, unknown>) => {
    const signed = String(req.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 ");
    calls.push({ operation, body, signed });
    const admin = operation.startsWith("Admin");
    if (admin && !signed) return cognitoError(res, "MissingAuthenticationTokenException", "Missing Authentication Token");
    if (admin && body.UserPoolId !== userPoolId) return cognitoError(res, "ResourceNotFoundException", `User pool ${String(body.UserPoolId)} does not exist.`);
    const username = String(body.Username ?? "");
    const attributes = (list: unknown) => Object.fromEntries(((list as { Name: string; Value: string }[] | undefined) ?? []).map((a) => [a.Name, a.Value]));
    const ok = (answer: unknown) => {
      res.writeHead(200, { "content-type": "application/x-amz-json-1.1" });
      res.end(JSON.stringify(answer));
    };
    switch (operation) {
      case "AdminCreateUser": {
        if (users.has(username)) return cognitoError(res, "UsernameExistsException", "User account already exists");
        addUser(username, `Temp-${Math.random()}`, { permanent: false, attributes: attributes(body.UserAttributes) });
        return ok({ User: { Username: username, UserStatus: "FORCE_CHANGE_PASSWORD", Enabled: true } });
      }
      case "AdminUpdateUserAttributes": {
        const user = users.get(username);
        if (!user) return cognitoError(res, "UserNotFoundException", "User does not exist.");
        Object.assign(user.attributes, attributes(body.UserAttributes));
        return ok({});
      }
      case "AdminSetUserPassword": {
        const user = users.get(username);
        if (!user) return cognitoError(res, "UserNotFoundException", "User does not exist.");
        const password = String(body.Password ?? "");
        if (password.length < 12 || !/[A-Z]/.test(password) || !/[^A-Za-z0-9]/.test(password)) {
          return cognitoError(res, "InvalidPasswordException", "Password did not conform with policy: Password not long enough");
        }
        Object.assign(user, { password, permanent: body.Permanent === true });
        return ok({});
      }
      case "InitiateAuth": {
        if (body.ClientId !== clientId) return cognitoError(res, "ResourceNotFoundException", "User pool client does not exist.");
        if (body.AuthFlow !== "USER_PASSWORD_AUTH") return cognitoError(res, "InvalidParameterException", "Auth flow not enabled for this client");
        const params = (body.AuthParameters ?? {}) as Record<string, string>;
        const user = users.get(params.USERNAME ?? "");
        if (!user || user.password !== params.PASSWORD) return cognitoError(res, "NotAuthorizedException", "Incorrect username or password.");
        if (!user.permanent) return ok({ ChallengeName: "NEW_PASSWORD_REQUIRED", Session: "session", ChallengeParameters: {} });
        return ok({
          AuthenticationResult: {
            IdToken: await idToken(params.USERNAME!, privateKey),
            AccessToken: `access-token-of-${user.sub}`,
            RefreshToken: "refresh",
            ExpiresIn: 3600,
            TokenType: "Bearer",
          },
          ChallengeParameters: {},
        });
      }
      default:
        return cognitoError(res, "UnknownOperationException", `the stand-in does not speak ${operation}`);
    }
  };

  const cloudFormation = (res: ServerResponse, form: URLSearchParams) => {
    calls.push({ operation: `cloudformation:${form.get("Action")}`, body: Object.fromEntries(form), signed: true });
    const name = form.get("StackName") ?? "";
    const outputs = stacks[name];
    res.setHeader("content-type", "text/xml");
    if (form.get("Action") !== "DescribeStacks" || !outputs) {
      res.statusCode = 400;
      return res.end(
        `<ErrorResponse xmlns="${CLOUDFORMATION_NS}"><Error><Type>Sender</Type><Code>ValidationError</Code>` +
          `<Message>Stack with id ${xmlEscape(name)} does not exist</Message></Error><RequestId>stand-in</RequestId></ErrorResponse>`,
      );
    }
    const members = Object.entries(outputs)
      .map(([k, v]) => `<member><OutputKey>${xmlEscape(k)}</OutputKey><OutputValue>${xmlEscape(v)}</OutputValue></member>`)
      .join("");
    res.end(
      `<DescribeStacksResponse xmlns="${CLOUDFORMATION_NS}"><DescribeStacksResult><Stacks><member>` +
        `<StackName>${xmlEscape(name)}</StackName><StackId>arn:aws:cloudformation:${region}:123456789012:stack/${xmlEscape(name)}/1</StackId>` +
        `<StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>2026-12-01T00:00:00Z</CreationTime><Outputs>${members}</Outputs>` +
        `</member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>stand-in</RequestId></ResponseMetadata></DescribeStacksResponse>`,
    );
  };

  const server = createServer(async (req, res) => {
    const text = await bodyOf(req);
    const target = String(req.headers["x-amz-target"] ?? "");
    if (target.startsWith(TARGET_PREFIX)) return cognito(req, res, target.slice(TARGET_PREFIX.length), JSON.parse(text || "{}") as Record<string, unknown>);
    return cloudFormation(res, new URLSearchParams(text));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    userPoolId,
    clientId,
    issuer,
    publicJwk: await exportJWK(publicKey),
    calls,
    addUser,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
