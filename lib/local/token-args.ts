import { readCliArgs } from "./cli-args.js";

export const TOKEN_USAGE = [
  "usage: npm run token -- <user> [--tenant <tenant>] [--roles a,b] [--ttl 12h]",
  "       npm run token -- --cognito (--stack <name> | --user-pool-id <id> --client-id <id>) <user> --password <password>",
  "                        [--create-user [--tenant <tenant>]] [--region <region>]",
].join("\n");

export const TOKEN_HELP = [
  TOKEN_USAGE,
  "Mints a token the local server accepts (valid for 12h unless --ttl says otherwise).",
  "With --cognito, signs <user> in to the stage's Cognito user pool (USER_PASSWORD_AUTH) and prints its ID token, whose",
  "audience is the pool's app client, for `npm run smoke`. --stack reads the pool and client from the stack's outputs;",
  "--create-user creates the user, or finds it, and sets its password (and tenant): both need AWS credentials.",
].join("\n");

/** The lifetimes jose accepts, in the forms worth telling a user about. */
const TTL = /^\d+(\.\d+)? ?(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)$/i;

/** Where a Cognito token comes from: a stack's outputs, or the pool and client named. */
export type UserPoolSource = { stack: string; region?: string } | { userPoolId: string; clientId: string; region: string };

export type TokenRequest =
  | { kind: "local"; user: string; tenant?: string; roles?: string[]; ttl?: string }
  | { kind: "cognito"; user: string; password: string; createUser: boolean; tenant?: string; source: UserPoolSource };

/** What `npm run token` is asked: a token to make, the help, or a mistake (`text`: the line and the usage). */
export type TokenArgs = TokenRequest | { kind: "help"; text: string } | { kind: "mistake"; text: string };

/** The region a user pool lives in, from its id (`eu-west-1_AbC123`); undefined for what is not a pool id. */
export function regionOfUserPool(userPoolId: string): string | undefined {
  return /^([a-z]{2}(?:-[a-z]+)+-\d+)_[A-Za-z0-9]+$/.exec(userPoolId)?.[1];
}

const OPTIONS = {
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
} as const;
const COGNITO_ONLY = ["stack", "user-pool-id", "client-id", "region", "password", "create-user"] as const;

/** Reads `npm run token`'s arguments; every mistake is one line naming it, before anything runs. */
export function readTokenArgs(args: string[]): TokenArgs {
  const read = readCliArgs(args, TOKEN_USAGE, { allowPositionals: true, options: OPTIONS });
  if (read.kind === "help") return { kind: "help", text: TOKEN_HELP };
  if (read.kind === "mistake") return read;
  const { positionals, values: v } = read.parsed;
  const mistake = (line: string): TokenArgs => ({ kind: "mistake", text: `error: ${line}\n${TOKEN_USAGE}` });
  const user = positionals[0];
  if (!user) return mistake("name the user the token is for");
  if (positionals.length > 1) return mistake(`one user only, got ${positionals.length}`);
  if (v.tenant === "") return mistake("--tenant is empty");

  if (!v.cognito) {
    const cognitoOnly = COGNITO_ONLY.find((k) => v[k] !== undefined);
    if (cognitoOnly) return mistake(`--${cognitoOnly} is for --cognito; without it the token is a local one`);
    if (v.ttl !== undefined && !TTL.test(v.ttl)) return mistake(`--ttl "${v.ttl}" is not a lifetime such as 30m, 12h or 7d`);
    return { kind: "local", user, tenant: v.tenant, roles: v.roles?.split(",").filter(Boolean), ttl: v.ttl };
  }

  if (v.roles !== undefined || v.ttl !== undefined)
    return mistake("--roles and --ttl are for local tokens; a Cognito token's claims and lifetime are the pool's");
  const userPoolId = v["user-pool-id"];
  const clientId = v["client-id"];
  if (v.stack !== undefined && (userPoolId !== undefined || clientId !== undefined)) return mistake("--stack or --user-pool-id and --client-id, not both");
  if (v.stack === undefined && (userPoolId === undefined || clientId === undefined))
    return mistake("--cognito needs --stack <name>, or --user-pool-id and --client-id");
  if (!v.password) return mistake("--cognito needs --password (the user's; --create-user sets it)");
  if (v.tenant !== undefined && !v["create-user"]) return mistake("--tenant with --cognito needs --create-user, which sets the user's tenant");
  let source: UserPoolSource;
  if (v.stack !== undefined) {
    source = { stack: v.stack, region: v.region };
  } else {
    const region = v.region ?? regionOfUserPool(userPoolId ?? "");
    if (!region) return mistake(`"${userPoolId}" is not a user pool id such as us-east-1_AbC123`);
    source = { userPoolId: userPoolId ?? "", clientId: clientId ?? "", region };
  }
  return { kind: "cognito", user, password: v.password, createUser: v["create-user"] === true, tenant: v.tenant, source };
}
