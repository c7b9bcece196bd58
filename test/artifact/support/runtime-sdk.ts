import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PROJECT_ROOT } from "../../../infra/bundling/bundling.js";

const NODE_MODULES = join(PROJECT_ROOT, "node_modules");

/** The packages of the AWS SDK v3 installed here, and everything they depend on (hoisted to the top). */
function sdkClosure(): Set<string> {
  const seen = new Set<string>();
  const queue = readdirSync(join(NODE_MODULES, "@aws-sdk")).map((name) => `@aws-sdk/${name}`);
  while (queue.length > 0) {
    const name = queue.pop()!;
    const manifest = join(NODE_MODULES, name, "package.json");
    if (seen.has(name) || !existsSync(manifest)) continue;
    seen.add(name);
    const { dependencies = {} } = JSON.parse(readFileSync(manifest, "utf8")) as { dependencies?: Record<string, string> };
    queue.push(...Object.keys(dependencies));
  }
  return seen;
}

/**
 * A directory for NODE_PATH holding the AWS SDK v3 and nothing else, as the Lambda Node.js runtime
 * provides it (its copy is on NODE_PATH; the bundles load it with require()). Anything else a
 * bundle fails to contain is then missing here as it would be in Lambda.
 */
export function runtimeSdkDirectory(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "threadwise-runtime-")), "node_modules");
  for (const name of sdkClosure()) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    symlinkSync(join(NODE_MODULES, name), join(dir, name), "dir");
  }
  return dir;
}
