import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import base from "../vitest.config.js";

/**
 * The project's vitest config restricted to one module's test files, which the launcher passes in
 * `MUTATION_TEST_FILES`. Stryker's own `testFiles` option is not used: with it, Stryker 10.1
 * activates a static mutant (a module-level constant) after the module has loaded, so every such
 * mutant survives whatever the tests check (stryker-js issues 6144 and 6209). Properties run with one
 * fixed seed (`fast-check-seed.ts`).
 */
const testFiles = process.env.MUTATION_TEST_FILES?.split(",").filter(Boolean) ?? [];
if (testFiles.length === 0) throw new Error("MUTATION_TEST_FILES is not set: run mutation testing through `npm run mutation`");

export default defineConfig({
  ...base,
  root: fileURLToPath(new URL("..", import.meta.url)),
  test: { ...base.test, include: testFiles, setupFiles: [fileURLToPath(new URL("fast-check-seed.ts", import.meta.url))] },
});
