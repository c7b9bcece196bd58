import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

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
    expect(errors).toEqual([message, expect.stringMatching(/^usage: /)]);
  });
});
