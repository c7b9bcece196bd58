import { describe, expect, it } from "vitest";
import { readTokenArgs, regionOfUserPool, TOKEN_USAGE } from "../../lib/local/token-args.js";

const mistakeOf = (args: string[]) => {
  const read = readTokenArgs(args);
  return read.kind === "mistake" ? read.text.split("\n")[0] : `no mistake: ${read.kind}`;
};

describe("npm run token's arguments (lib/local/token-args.ts)", () => {
  it("reads a local token's user, tenant, roles and lifetime", () => {
    expect(readTokenArgs(["alice", "--tenant", "acme", "--roles", "analyst,,admin", "--ttl", "30m"])).toEqual({
      kind: "local",
      user: "alice",
      tenant: "acme",
      roles: ["analyst", "admin"],
      ttl: "30m",
    });
  });

  it("reads --cognito with a stack, or with a pool and client whose id names the region", () => {
    expect(readTokenArgs(["--cognito", "--stack", "dev-threadwise", "smoke", "--password", "pw", "--create-user", "--tenant", "acme"])).toEqual({
      kind: "cognito",
      user: "smoke",
      password: "pw",
      createUser: true,
      tenant: "acme",
      source: { stack: "dev-threadwise", region: undefined },
    });
    const byIds = readTokenArgs(["--cognito", "--user-pool-id", "eu-west-1_AbC123", "--client-id", "client", "smoke", "--password", "pw"]);
    expect(byIds).toMatchObject({ kind: "cognito", createUser: false, source: { userPoolId: "eu-west-1_AbC123", clientId: "client", region: "eu-west-1" } });
  });

  it.each([
    [["--cognito", "smoke", "--password", "x"], "error: --cognito needs --stack <name>, or --user-pool-id and --client-id"],
    [["--cognito", "smoke", "--user-pool-id", "eu-west-1_A", "--password", "x"], "error: --cognito needs --stack <name>, or --user-pool-id and --client-id"],
    [
      ["--cognito", "smoke", "--stack", "dev-threadwise", "--client-id", "abc", "--password", "x"],
      "error: --stack or --user-pool-id and --client-id, not both",
    ],
    [["--cognito", "smoke", "--stack", "dev-threadwise"], "error: --cognito needs --password (the user's; --create-user sets it)"],
    [
      ["--cognito", "smoke", "--stack", "s", "--password", "x", "--ttl", "1h"],
      "error: --roles and --ttl are for local tokens; a Cognito token's claims and lifetime are the pool's",
    ],
    [
      ["--cognito", "smoke", "--stack", "s", "--password", "x", "--tenant", "acme"],
      "error: --tenant with --cognito needs --create-user, which sets the user's tenant",
    ],
    [["--cognito", "smoke", "--user-pool-id", "nope", "--client-id", "abc", "--password", "x"], 'error: "nope" is not a user pool id such as us-east-1_AbC123'],
    [["smoke", "--stack", "dev-threadwise"], "error: --stack is for --cognito; without it the token is a local one"],
    [["smoke", "--password", "x"], "error: --password is for --cognito; without it the token is a local one"],
    [["--cognito", "--stack", "s", "--password", "x"], "error: name the user the token is for"],
    [["a", "b"], "error: one user only, got 2"],
    [["alice", "--tenant", ""], "error: --tenant is empty"],
  ])("refuses %j in one line: %s", (args, line) => {
    expect(mistakeOf(args)).toBe(line);
    const read = readTokenArgs(args);
    expect(read.kind === "mistake" && read.text.endsWith(TOKEN_USAGE)).toBe(true);
  });

  it("answers --help with the usage and what each mode does", () => {
    const read = readTokenArgs(["--help"]);
    expect(read.kind).toBe("help");
    expect(read.kind === "help" && read.text).toMatch(/^usage: npm run token -- <user>[\s\S]*--cognito[\s\S]*ID token/);
  });

  it("reads the region from a user pool id, and nothing from what is not one", () => {
    expect(regionOfUserPool("us-gov-west-1_AbC123")).toBe("us-gov-west-1");
    expect(regionOfUserPool("eu-central-2_x9")).toBe("eu-central-2");
    expect(regionOfUserPool("AbC123")).toBeUndefined();
    expect(regionOfUserPool("us-east-1")).toBeUndefined();
  });
});
