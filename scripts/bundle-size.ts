// The size of each named function's bundle (index.mjs, minified), built with the stack's own esbuild
// options: `npx tsx scripts/bundle-size.ts api stream worker`. docs/bundling.md quotes its figures.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { bundleOptions, PROJECT_ROOT } from "../infra/bundling/bundling.js";

for (const name of process.argv.slice(2)) {
  const dir = mkdtempSync(join(tmpdir(), "tw-bundle-size-"));
  const out = join(dir, "index.mjs");
  await build(bundleOptions(join(PROJECT_ROOT, "functions", `${name}.ts`), out));
  console.log(`${name}\t${statSync(out).size}`);
  rmSync(dir, { recursive: true, force: true });
}
