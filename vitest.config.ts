import { defineConfig } from "vitest/config";

/**
 * Files that measure time or CPU, hold child processes, or run the synthesized bundles: they run
 * one at a time, first, on a quiet machine. Everything else runs two files at a time (on this
 * 2-core CI machine Vitest's default would be one worker, and most files wait on MongoDB and
 * sockets rather than the CPU). A new test that asserts on elapsed time or CPU belongs here.
 */
export const SEQUENTIAL_FILES = [
  "test/local/**/*.test.ts",
  "test/artifact/**/*.test.ts",
  "test/bench/**/*.test.ts",
  "test/functions/**/*.test.ts",
  "test/agent/long-conversation.test.ts",
  "test/mcp/mcp-tool-catalog.bounds.test.ts",
  "test/agent/approval-context.unit.test.ts",
  "test/agent/turn-fencing.test.ts",
  "test/api/database-freeze.test.ts",
  "test/api/request-fuzz.test.ts",
  "test/api/agent-protocol-use-stream.test.ts",
  "test/approvals/approvals.test.ts",
  "test/channels/slack/handle-slack-event.test.ts",
  "test/channels/slack/slack-event.unit.test.ts",
  "test/channels/slack/verify-slack-request.unit.test.ts",
  "test/channels/teams/verify-bot-framework-request.test.ts",
  "test/events/turn-event-follower.test.ts",
  "test/events/turn-event-hub.unit.test.ts",
  "test/model-view/build-model-view.unit.test.ts",
  "test/model-view/token-counter.unit.test.ts",
  "test/queue/retry-policy.unit.test.ts",
  "test/queue/turn-job-worker.test.ts",
  "test/recall/conversation-search.test.ts",
  "test/recall/search-conversation-tool.test.ts",
  "test/store/artifact-store.test.ts",
  "test/store/checkpoint/thread-fences.test.ts",
  "test/store/idempotency-persistence-layer.test.ts",
  "test/store/mongo-client.test.ts",
  "test/store/threadwise-saver-turns.test.ts",
  "test/store/turn-archive-store.test.ts",
  "test/tools/powerbi/power-bi-client.test.ts",
  "test/tools/sql/athena-query-engine.test.ts",
  "test/tools/sql/sqlite-query-engine.unit.test.ts",
  "test/tools/tool-registry.test.ts",
];

/**
 * The tiers (docs/testing.md, "Tiers"). A file named `*.unit.test.ts` starts nothing: no embedded
 * database, app, child process or server (test/architecture/test-tiers.unit.test.ts checks its
 * imports; test/support/unit-tier.ts makes a server or child process throw), and runs in seconds:
 * `npm run test:unit`. Every other file is in the integration tier, which has the embedded database
 * (`npm run test:integration`). `npm test` runs both.
 */
export const UNIT_FILES = ["test/**/*.unit.test.ts"];

/** The sequential files of the unit tier: SEQUENTIAL_FILES' globs and paths, as far as they name unit files. */
const UNIT_SEQUENTIAL_FILES = SEQUENTIAL_FILES.map((glob) => (glob.endsWith(".unit.test.ts") ? glob : glob.replace(/[.]test[.]ts$/, ".unit.test.ts")));

const unit = { setupFiles: ["test/support/unit-tier.ts"] };
const integration = { globalSetup: ["test/support/global-setup.ts"] };

export default defineConfig({
  test: {
    // The LangGraph checkpoint conformance suite registers its specs through vitest globals.
    globals: true,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Sequential files first, one at a time, then the rest two at a time: the unit tier, then the integration tier.
    projects: [
      {
        extends: true,
        test: { ...unit, name: "unit-sequential", include: UNIT_SEQUENTIAL_FILES, maxWorkers: 1, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { ...integration, name: "integration-sequential", include: SEQUENTIAL_FILES, exclude: UNIT_FILES, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { ...unit, name: "unit", include: UNIT_FILES, exclude: UNIT_SEQUENTIAL_FILES, maxWorkers: 2, sequence: { groupOrder: 2 } },
      },
      {
        extends: true,
        test: {
          ...integration,
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: [...SEQUENTIAL_FILES, ...UNIT_FILES],
          maxWorkers: 2,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
