import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { nodeVersionProblem } from "../../lib/local/node-version.js";
import { mongoUri } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";

// The server sets up this database; the fixture drops it after the file.
const database = useTestDatabase("main", { clearBeforeEach: false });

/** A port free at the time of asking. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("main (npm start)", { timeout: 90_000 }, () => {
  it("checks the Node version first, starts the server, says where it listens, and exits 0 on SIGTERM", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", "lib/local/main.ts"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        MONGODB_URI: mongoUri(),
        MONGODB_DB: database.dbName,
        PORT: String(port),
        MODEL_PROVIDER: "local",
        AWS_EC2_METADATA_DISABLED: "true",
      },
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString("utf8");
        if (stdout.includes("get a token with")) resolve();
      });
      child.once("exit", () => reject(new Error(`exited before listening: ${stderr}`)));
    });
    expect(stdout).toContain(`threadwise listening on http://127.0.0.1:${port}`);
    expect(stdout).toContain("model provider local");
    // The running Node's problem, if any, is the first thing said.
    const problem = nodeVersionProblem(process.version);
    if (problem) expect(stderr.split("\n")[0]).toBe(`${problem.level}: ${problem.message}`);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });

  it("exits within 5 s of SIGTERM while a client holds a request open", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", "lib/local/main.ts"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        MONGODB_URI: mongoUri(),
        MONGODB_DB: database.dbName,
        PORT: String(port),
        MODEL_PROVIDER: "local",
        AWS_EC2_METADATA_DISABLED: "true",
      },
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString("utf8");
        if (stdout.includes("get a token with")) resolve();
      });
      child.once("exit", () => reject(new Error("exited before listening")));
    });
    // A request whose body never finishes: the server is in the middle of it, so the connection is not idle.
    const held = connect(port, "127.0.0.1");
    held.on("error", () => undefined);
    await new Promise<void>((resolve) => held.once("connect", () => resolve()));
    held.write("POST /v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
    // And a keep-alive connection after a finished request.
    await fetch(`http://127.0.0.1:${port}/healthz`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const signalled = Date.now();
    child.kill("SIGTERM");
    const code = await Promise.race([exited, new Promise<"running">((resolve) => setTimeout(() => resolve("running"), 8_000))]);
    if (code === "running") child.kill("SIGKILL");
    held.destroy();
    expect(code).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(5_000);
  });
});
