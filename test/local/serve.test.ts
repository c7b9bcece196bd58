import { createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

/** `npm start`: lib/local/main.ts checks the Node version, then serve.ts starts the server or says in one line what to fix. */
const serve = (env: Record<string, string>) => runCli("lib/local/main.ts", [], { PORT: "3990", ...env });

describe("serve (npm start): mistakes answered in one line", { timeout: 90_000 }, () => {
  it("exits 1 naming the variable and where to fix it for a configuration value that is wrong", async () => {
    const { code, errors } = await serve({ PORT: "abc" });
    expect(code).toBe(1);
    expect(errors).toEqual([expect.stringMatching(/^invalid configuration: PORT: .*; fix it in the environment \(see docs\/configuration\.md\)\.$/)]);
  });

  it("names a misspelt setting with its likely intent before anything else, even when start-up then fails", async () => {
    const { code, errors } = await serve({ MODEL_PROVDER: "bedrock", PORT: "abc" });
    expect(code).toBe(1);
    expect(errors).toEqual(["MODEL_PROVDER is not a setting; did you mean MODEL_PROVIDER?", expect.stringMatching(/^invalid configuration: PORT: /)]);
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
