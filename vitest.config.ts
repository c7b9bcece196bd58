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
  "test/agent/approval-context.test.ts",
  "test/agent/turn-fencing.test.ts",
  "test/api/database-freeze.test.ts",
  "test/api/request-fuzz.test.ts",
  "test/api/agent-protocol-use-stream.test.ts",
  "test/approvals/approvals.test.ts",
  "test/channels/slack/handle-slack-event.test.ts",
  "test/channels/slack/slack-event.test.ts",
  "test/channels/slack/verify-slack-request.test.ts",
  "test/channels/teams/verify-bot-framework-request.test.ts",
  "test/events/turn-event-follower.test.ts",
  "test/events/turn-event-hub.test.ts",
  "test/model-view/build-model-view.test.ts",
  "test/model-view/token-counter.test.ts",
  "test/queue/retry-policy.test.ts",
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
  "test/tools/sql/sqlite-query-engine.test.ts",
  "test/tools/tool-registry.test.ts",
];

export default defineConfig({
  test: {
    // The LangGraph checkpoint conformance suite registers its specs through vitest globals.
    globals: true,
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    projects: [
      {
        extends: true,
        test: { name: "sequential", include: SEQUENTIAL_FILES, maxWorkers: 1, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: {
          name: "parallel",
          include: ["test/**/*.test.ts"],
          exclude: SEQUENTIAL_FILES,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
