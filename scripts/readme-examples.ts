import { spawn } from "node:child_process";

/**
 * The README's shell examples, run as a newcomer runs them. Every ```bash block of the README is
 * an example; a block preceded by `<!-- not run: <why> -->` is one the test cannot run (it needs a
 * key, or starts a server itself) and says why. `test/architecture/readme-examples.test.ts` runs
 * the others against a local server; `npx tsx scripts/readme-examples.ts` lists them.
 */

export interface ShellExample {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  /** Why the block is not run, when it says so. */
  notRun?: string;
}

const NOT_RUN = /^<!-- not run: (.+?) -->$/;

/** The ```bash blocks of a Markdown text, in order, each with the line it starts on. */
export function shellExamples(markdown: string): ShellExample[] {
  const lines = markdown.split("\n");
  const examples: ShellExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```bash") continue;
    const end = lines.indexOf("```", i + 1);
    if (end < 0) throw new Error(`line ${i + 1}: a bash block without its closing fence`);
    const notRun = NOT_RUN.exec(lines[i - 1] ?? "")?.[1];
    examples.push({ line: i + 1, code: lines.slice(i + 1, end).join("\n"), ...(notRun ? { notRun } : {}) });
    i = end;
  }
  return examples;
}

/**
 * What a block runs: its text with the README's `localhost:3000` pointed at `origin`, after a
 * preamble that stops at the first failure, an unset variable, or an HTTP error (curl's
 * `--fail-with-body`), so that an example that would answer a 404 as written fails here.
 */
export function runnableScript(code: string, origin: URL): string {
  const pointed = code.replaceAll("localhost:3000", origin.host).replaceAll("127.0.0.1:3000", origin.host);
  return ["set -euo pipefail", 'curl() { command curl --fail-with-body --max-time 30 "$@"; }', pointed, ""].join("\n");
}

/** Runs one example with bash in `cwd`; its exit code and what it printed. */
export function runExample(code: string, origin: URL, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", runnableScript(code, origin)], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.once("error", reject);
    child.once("close", (exit) => resolve({ code: exit, output }));
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { readFile } = await import("node:fs/promises");
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  for (const example of shellExamples(readme)) {
    console.log(`README.md:${example.line}${example.notRun ? ` (not run: ${example.notRun})` : ""}\n${example.code}\n`);
  }
}
