// Bundles one Lambda handler: `node --import tsx infra/bundling/bundle-function.ts <entry> <outdir>`.
// Run by the stack's asset bundling (functionCode in bundling.ts), in a child process because CDK
// bundles synchronously and esbuild's plugins need its async API.
import { resolve } from "node:path";
import { bundleFunction } from "./bundling.js";

const [entry, outdir] = process.argv.slice(2);
if (!entry || !outdir) throw new Error("usage: bundle-function.ts <entry> <outdir>");
await bundleFunction(resolve(entry), resolve(outdir));
