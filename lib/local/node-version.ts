/** Oldest Node.js major the local server and CLIs run on (the AWS SDK and `globalThis.crypto` need it). */
export const MIN_NODE_MAJOR = 20;
/** The major Lambda runs the functions on, and the one to install. */
export const LAMBDA_NODE_MAJOR = 22;
/** Majors past their end of life that still work: a warning, not a refusal. */
const END_OF_LIFE_MAJORS: Record<number, string> = { 20: "April 2026" };

/**
 * The Node.js version policy, as one line for the console: an error below the minimum, a warning
 * for a supported major past its end of life, nothing otherwise. Imports nothing, so an entry
 * point can check before loading modules that would crash on an old Node.
 */
export function nodeVersionProblem(version: string): { level: "error" | "warning"; message: string } | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? 0);
  if (major < MIN_NODE_MAJOR) {
    return {
      level: "error",
      message: `Threadwise needs Node.js ${MIN_NODE_MAJOR} or later; this is ${version}. Install Node.js ${LAMBDA_NODE_MAJOR}, as Lambda runs.`,
    };
  }
  const endOfLife = END_OF_LIFE_MAJORS[major];
  if (endOfLife) {
    return {
      level: "warning",
      message: `Node.js ${major} reached its end of life in ${endOfLife}; Threadwise runs on it, but use Node.js ${LAMBDA_NODE_MAJOR}, as Lambda does.`,
    };
  }
  return undefined;
}

/**
 * Checks the running Node.js: exits with the one-line error, or prints the warning (unless `quiet`,
 * as for `npm run token`, whose output is read by scripts) and goes on.
 */
export function enforceNodeVersion(options: { quiet?: boolean } = {}): void {
  const problem = nodeVersionProblem(process.version);
  if (!problem) return;
  // Said here in one line, or on purpose not at all: the AWS SDK would add a nine-line warning of its own.
  if (problem.level === "warning") process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  if (problem.level === "warning" && options.quiet) return;
  console.error(`${problem.level}: ${problem.message}`);
  if (problem.level === "error") process.exit(1);
}
