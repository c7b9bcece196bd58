import { execFile } from "node:child_process";

export interface CliRun {
  code: number | null;
  stdout: string;
  /** stderr without the Node-version warning these machines print (Node 20). */
  errors: string[];
}

/** Runs a CLI of the repo as `npm` would (tsx), with only the given environment beside PATH and HOME. */
export function runCli(script: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
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
