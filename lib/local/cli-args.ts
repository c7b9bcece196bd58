import { parseArgs, type ParseArgsConfig } from "node:util";

type Parsed<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;
type Options = NonNullable<ParseArgsConfig["options"]>;

/** What a command line asks for: a run with these values, the usage, or nothing, being wrong (`text` says how). */
export type CliArgs<T extends ParseArgsConfig> = { kind: "run"; parsed: Parsed<T> } | { kind: "help"; text: string } | { kind: "mistake"; text: string };

/**
 * Reads `args` by `config`, with `--help` (`-h`) added. Node's own message of a mistake (an unknown
 * option, a missing value) goes on to explain `--`; its first sentence names the mistake.
 */
export function readCliArgs<const T extends ParseArgsConfig>(args: string[], usage: string, config: T): CliArgs<T> {
  let parsed: Parsed<T>;
  try {
    parsed = parseArgs({ ...config, args, options: { ...config.options, help: { type: "boolean", short: "h" } } }) as unknown as Parsed<T>;
  } catch (error) {
    return { kind: "mistake", text: `error: ${(error as Error).message.split(". ")[0]}\n${usage}` };
  }
  if ((parsed.values as { help?: boolean }).help) return { kind: "help", text: usage };
  return { kind: "run", parsed };
}

/**
 * For a CLI's entry (`npm run smoke`, `npm run preflight`, the benchmarks): the values to run with;
 * else it prints the usage and exits 0, or the mistake and the usage and exits 2, never a stack trace.
 */
export function parseCliArgs<const T extends ParseArgsConfig>(usage: string, config: T, args: string[] = process.argv.slice(2)): Parsed<T> {
  const read = readCliArgs(args, usage, config);
  if (read.kind === "run") return read.parsed;
  if (read.kind === "help") {
    console.log(read.text);
    process.exit(0);
  }
  console.error(read.text);
  process.exit(2);
}

/** The usage line of a command that takes only options: `usage: npm run bench:storage -- [--turns 200] [--write]`. */
export function optionsUsage(command: string, options: Options): string {
  const parts = Object.entries(options).map(([name, option]) => {
    if (option.type === "boolean") return `[--${name}]`;
    return `[--${name} ${option.default === undefined ? `<${name}>` : String(option.default)}]`;
  });
  return [`usage: npm run ${command}`, ...(parts.length > 0 ? ["--", ...parts] : [])].join(" ");
}
