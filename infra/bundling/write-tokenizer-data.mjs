// After bundling: writes js-tiktoken's cl100k_base ranks as JSON into the bundle directory
// (argv[2]), where infra/bundling/cl100k-base.ts reads them. Plain JS: run by `node` from the
// NodejsFunction afterBundling hook and by the cold-start benchmark.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const { default: ranks } = await import("js-tiktoken/ranks/cl100k_base");
writeFileSync(join(process.argv[2], "cl100k_base.json"), JSON.stringify(ranks));
