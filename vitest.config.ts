import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The LangGraph checkpoint conformance suite registers its specs through vitest globals.
    globals: true,
    globalSetup: ["test/support/global-setup.ts"],
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
