/** A module under mutation testing and the test files that must catch its mutants on their own. */
export interface MutationModule {
  module: string;
  tests: string[];
  /**
   * Scales the fast-check runs of its property tests (`PROPERTY_RUNS_FACTOR`, test/support/property-runs.ts)
   * where the full count per mutant would make a run take an hour; the seed is fixed (fast-check-seed.ts).
   */
  propertyRunsFactor?: number;
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
    tests: [
      "test/model-view/build-model-view.unit.test.ts",
      "test/model-view/build-model-view.property.test.ts",
      "test/model-view/build-model-view.dispositions.test.ts",
    ],
    propertyRunsFactor: 0.1,
  },
  { module: "lib/model-view/validate-view.ts", tests: ["test/model-view/validate-view.unit.test.ts"] },
  { module: "lib/store/lease.ts", tests: ["test/store/lease.test.ts"] },
  { module: "lib/tools/sql/read-only-sql.ts", tests: ["test/tools/sql/read-only-sql.unit.test.ts"] },
  { module: "lib/channels/slack/verify-slack-request.ts", tests: ["test/channels/slack/verify-slack-request.unit.test.ts"] },
  { module: "lib/channels/teams/verify-bot-framework-request.ts", tests: ["test/channels/teams/verify-bot-framework-request.test.ts"] },
  { module: "lib/model-view/cache-points.ts", tests: ["test/model-view/cache-points.unit.test.ts"] },
  { module: "lib/store/write-fence.ts", tests: ["test/store/write-fence.test.ts"] },
  { module: "lib/recall/recall-terms.ts", tests: ["test/recall/recall-terms.unit.test.ts"] },
  { module: "lib/recall/conversation-search.ts", tests: ["test/recall/conversation-search.test.ts"] },
  { module: "lib/events/turn-event-hub.ts", tests: ["test/events/turn-event-hub.unit.test.ts"] },
  { module: "lib/approvals/approval-policy.ts", tests: ["test/approvals/approval-policy.unit.test.ts"] },
  { module: "lib/approvals/approvals.ts", tests: ["test/approvals/approvals.test.ts"] },
  { module: "lib/approvals/edited-arguments.ts", tests: ["test/approvals/edited-arguments.unit.test.ts"] },
  { module: "lib/events/turn-event-recorder.ts", tests: ["test/events/turn-event-recorder.test.ts"] },
  { module: "lib/events/turn-event-follower.ts", tests: ["test/events/turn-event-follower.test.ts"] },
  { module: "lib/auth/principal.ts", tests: ["test/auth/principal.unit.test.ts"] },
  { module: "lib/auth/caller-from-claims.ts", tests: ["test/auth/caller-from-claims.unit.test.ts"] },
  { module: "lib/auth/channel-roles.ts", tests: ["test/auth/channel-roles.unit.test.ts"] },
];
