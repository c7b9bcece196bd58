import { describe, expect, it } from "vitest";
import { optionsUsage, readCliArgs } from "../../lib/local/cli-args.js";
import { runCli } from "../support/cli.js";

const OPTIONS = { turns: { type: "string", default: "200" }, seed: { type: "string" }, write: { type: "boolean", default: false } } as const;
const USAGE = "usage: npm run bench:x -- [--turns 200] [--seed <seed>] [--write]";

describe("cli-args", () => {
  describe("readCliArgs", () => {
    it("returns the values with the defaults applied", () => {
      const read = readCliArgs(["--write", "--seed", "9"], USAGE, { options: OPTIONS });
      expect(read.kind === "run" && read.parsed.values).toEqual({ turns: "200", seed: "9", write: true });
    });

    it("returns the usage for --help and -h", () => {
      expect(readCliArgs(["--help"], USAGE, { options: OPTIONS })).toEqual({ kind: "help", text: USAGE });
      expect(readCliArgs(["-h"], USAGE, { options: OPTIONS })).toEqual({ kind: "help", text: USAGE });
    });

    it.each([
      [["--bogus"], "error: Unknown option '--bogus'"],
      [["--seed"], "error: Option '--seed <value>' argument missing"],
      [["extra"], "error: Unexpected argument 'extra'"],
    ])("returns the mistake's first sentence and the usage for %j", (args, message) => {
      expect(readCliArgs(args, USAGE, { options: OPTIONS })).toEqual({ kind: "mistake", text: `${message}\n${USAGE}` });
    });
  });

  describe("optionsUsage", () => {
    it("returns each option with its default, a placeholder, or alone for a flag", () => {
      expect(optionsUsage("bench:x", OPTIONS)).toBe(USAGE);
      expect(optionsUsage("bench:y", {})).toBe("usage: npm run bench:y");
    });
  });

  describe("parseCliArgs, as the commands use it", { timeout: 90_000 }, () => {
    it("prints the usage and exits 0 for npm run smoke -- --help", async () => {
      const { code, stdout, errors } = await runCli("scripts/smoke.ts", ["--help"]);
      expect([code, errors]).toEqual([0, []]);
      expect(stdout).toMatch(/^usage: npm run smoke -- <api url> --token <jwt>/);
    });

    it("exits 2 with one line and the usage, not a stack trace, for an option npm run smoke does not know", async () => {
      const { code, errors } = await runCli("scripts/smoke.ts", ["https://api.example", "--tokn", "x"]);
      expect(code).toBe(2);
      expect(errors).toEqual(["error: Unknown option '--tokn'", expect.stringMatching(/^usage: npm run smoke -- /)]);
    });

    it.each([
      ["bench/linear-time-benchmark.ts", "usage: npm run bench:linear -- [--seed 7] [--random 200] [--write]"],
      ["bench/cold-start-benchmark.ts", "usage: npm run bench:cold-start -- [--runs <runs>] [--write]"],
    ])("takes --write for %s, as the README says of every benchmark (it stopped on it before)", async (script, usage) => {
      const { code, stdout } = await runCli(script, ["--write", "--help"]);
      expect(code).toBe(0);
      expect(stdout).toBe(`${usage}\n`);
    });
  });
});
