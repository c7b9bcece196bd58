import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

describe("config-table-cli (npm run docs:config)", { timeout: 90_000 }, () => {
  it("leaves docs/configuration.md alone and says so when its configuration table matches the settings", async () => {
    // test/config/config-table.unit.test.ts fails first when they differ; this runs the command the page names.
    const { code, stdout, errors } = await runCli("lib/local/config-table-cli.ts", []);
    expect([code, errors]).toEqual([0, []]);
    expect(stdout).toBe("docs/configuration.md: configuration table up to date\n");
  });
});
