/**
 * What the AWS Encryption SDK adds to the Lambda bundles: the `api` and `worker` functions bundled
 * with the stack's esbuild options (`bundleOptions`), once as deployed and once with the
 * `@aws-crypto/*` packages left out, minified and gzipped sizes.
 *
 *   npx tsx bench/encryption-bundle-size.ts
 */
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { bundleOptions } from "../infra/bundling/bundling.js";

const dir = mkdtempSync(join(tmpdir(), "threadwise-encryption-bundle-"));
const kib = (bytes: number) => `${Math.round(bytes / 1024).toLocaleString("en")} KiB`;
for (const fn of ["api", "worker"]) {
  const sizes: string[] = [];
  for (const leaveOut of [false, true]) {
    const outfile = join(dir, `${fn}-${leaveOut ? "without" : "with"}.mjs`);
    const options = bundleOptions(`functions/${fn}.ts`, outfile);
    await build({ ...options, external: [...(options.external ?? []), ...(leaveOut ? ["@aws-crypto/*"] : [])] });
    sizes.push(`${leaveOut ? "without @aws-crypto" : "as deployed"} ${kib(statSync(outfile).size)} (${kib(gzipSync(readFileSync(outfile)).length)} gzip)`);
  }
  process.stdout.write(`${fn}: ${sizes.join(", ")}\n`);
}
