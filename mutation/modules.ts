/** A module under mutation testing and the test files that must catch its mutants on their own. */
export interface MutationModule {
  module: string;
  tests: string[];
}

/** The score every core module must reach (issue 21). */
export const MUTATION_SCORE_TARGET = 90;

/**
 * The core: modules whose small bugs would be security holes or silently wrong state. Each runs
 * only the tests that exercise it, so one module takes minutes, not the whole suite per mutant.
 */
export const CORE_MODULES: MutationModule[] = [
  {
    module: "lib/model-view/build-model-view.ts",
    tests: ["test/model-view/build-model-view.test.ts", "test/model-view/build-model-view.property.test.ts"],
  },
  { module: "lib/model-view/validate-view.ts", tests: ["test/model-view/validate-view.test.ts"] },
  { module: "lib/store/lease.ts", tests: ["test/store/lease.test.ts"] },
  { module: "lib/tools/sql/read-only-sql.ts", tests: ["test/tools/sql/read-only-sql.test.ts"] },
  { module: "lib/channels/slack/verify-slack-request.ts", tests: ["test/channels/slack/verify-slack-request.test.ts"] },
  { module: "lib/channels/teams/verify-bot-framework-request.ts", tests: ["test/channels/teams/verify-bot-framework-request.test.ts"] },
  { module: "lib/model-view/cache-points.ts", tests: ["test/model-view/cache-points.test.ts"] },
  { module: "lib/store/write-fence.ts", tests: ["test/store/write-fence.test.ts"] },
  { module: "lib/recall/recall-terms.ts", tests: ["test/recall/recall-terms.test.ts"] },
  { module: "lib/recall/conversation-search.ts", tests: ["test/recall/conversation-search.test.ts"] },
  { module: "lib/events/turn-event-hub.ts", tests: ["test/events/turn-event-hub.test.ts"] },
  { module: "lib/approvals/approval-policy.ts", tests: ["test/approvals/approval-policy.test.ts"] },
  { module: "lib/approvals/approvals.ts", tests: ["test/approvals/approvals.test.ts"] },
  { module: "lib/approvals/edited-arguments.ts", tests: ["test/approvals/edited-arguments.test.ts"] },
];
