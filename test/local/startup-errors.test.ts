import { execFile } from "node:child_process";
import { createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";

interface Run {
  code: number | null;
  stdout: string;
  /** stderr without the Node-version warning these machines print (Node 20). */
  errors: string[];
}

/** Runs a CLI of the repo as `npm` would (tsx), with only the given environment beside PATH and HOME. */
function run(script: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", script, ...args],
      {
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "",
          // No AWS credentials from this machine, and no instance metadata to wait for.
          AWS_CONFIG_FILE: "/nonexistent",
          AWS_SHARED_CREDENTIALS_FILE: "/nonexistent",
          AWS_EC2_METADATA_DISABLED: "true",
          ...env,
        },
      },
      (_error, stdout, stderr) => {
        const errors = stderr.split("\n").filter((line) => line !== "" && !line.startsWith("warning: Node.js"));
        resolve({ code: child.exitCode, stdout, errors });
      },
    );
  });
}

const serve = (env: Record<string, string>) => run("lib/local/main.ts", [], { PORT: "3990", ...env });

describe("local server and token CLI: mistakes answered in one line", { timeout: 90_000 }, () => {
  describe("npm start", () => {
    it("exits 1 naming the variable and where to fix it for a configuration value that is wrong", async () => {
      const { code, errors } = await serve({ PORT: "abc" });
      expect(code).toBe(1);
      expect(errors).toEqual([expect.stringMatching(/^invalid configuration: PORT: .*; fix it in the environment \(see "Configuration" in the README\)\.$/)]);
    });

    it("exits 1 within the server selection timeout for an unreachable MongoDB, naming its host and never its password", async () => {
      const started = Date.now();
      const { code, errors } = await serve({ MONGODB_URI: "mongodb://ada:s3cret@127.0.0.1:1/threadwise", MONGODB_SERVER_SELECTION_TIMEOUT_MS: "500" });
      expect(code).toBe(1);
      expect(errors).toEqual([expect.stringMatching(/^cannot reach MongoDB at 127\.0\.0\.1:1 within 500 ms; start it or fix MONGODB_URI/)]);
      expect(errors.join("\n")).not.toContain("s3cret");
      // The driver's default would wait 30 s before saying anything.
      expect(Date.now() - started).toBeLessThan(25_000);
    });

    it("exits 1 telling how to give credentials, or to use the offline model, for Bedrock without AWS credentials", async () => {
      const { code, errors } = await serve({ MODEL_PROVIDER: "bedrock" });
      expect(code).toBe(1);
      expect(errors).toEqual([expect.stringMatching(/^MODEL_PROVIDER=bedrock needs AWS credentials .*MODEL_PROVIDER=local/)]);
    });

    it("exits 1 naming a port that is taken and what to set", async () => {
      const blocker: Server = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
      const port = String((blocker.address() as { port: number }).port);
      try {
        const { code, errors } = await serve({ PORT: port });
        expect(code).toBe(1);
        expect(errors).toEqual([`cannot listen on 127.0.0.1:${port} (EADDRINUSE); set PORT to a free port`]);
      } finally {
        blocker.close();
      }
    });
  });

  describe("npm run token", () => {
    it("prints the usage and exits 0 for --help", async () => {
      const { code, stdout, errors } = await run("lib/local/token-cli.ts", ["--help"]);
      expect([code, errors]).toEqual([0, []]);
      expect(stdout).toMatch(/^usage: npm run token -- <user>/);
    });

    it.each([
      [["--ttl", "abc", "alice"], 'error: --ttl "abc" is not a lifetime such as 30m, 12h or 7d'],
      [["--bogus", "alice"], "error: Unknown option '--bogus'"],
      [[], "error: name the user the token is for"],
    ])("exits 2 with what is wrong and the usage for %j", async (args, message) => {
      const { code, errors } = await run("lib/local/token-cli.ts", args);
      expect(code).toBe(2);
      expect(errors).toEqual([message, expect.stringMatching(/^usage: /)]);
    });
  });
});
