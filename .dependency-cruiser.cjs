/**
 * The house's dependency rules (`npm run lint:deps`, run by `npm test` through
 * test/architecture/checks.test.ts, which also shows each rule failing on a deliberate violation).
 *
 * `lib/` is built in layers, lowest first; a module imports from its own layer or lower ones,
 * types included, so no arrow runs upward. Every folder and file of lib/ is in one layer
 * (test/architecture/layers.unit.test.ts). The README's "Layout" section describes the rooms.
 */
const LAYERS = [
  ["foundation", "^lib/(errors|validation|clock|prng|logger|derived-id|byte-bounded-map)[.]ts$"],
  ["config", "^lib/config/"],
  ["observability", "^lib/observability/"],
  ["identity and view", "^lib/(auth|model-view)/"],
  ["crypto", "^lib/crypto/"],
  ["store", "^lib/store/"],
  ["events", "^lib/events/"],
  ["audit", "^lib/audit/"],
  ["limits", "^lib/limits/"],
  ["tools", "^lib/tools/"],
  ["recall", "^lib/recall/"],
  ["agent", "^lib/agent/"],
  ["queue", "^lib/queue/"],
  ["approvals", "^lib/approvals/"],
  ["mcp", "^lib/mcp/"],
  ["channels", "^lib/channels/"],
  ["lifecycle", "^lib/lifecycle/"],
  ["app", "^lib/(app|setup-database)[.]ts$"],
  ["api", "^lib/api/"],
  ["ops", "^lib/ops/"],
  ["local", "^lib/local/"],
];

const layerRules = LAYERS.slice(0, -1).map(([name, path], i) => ({
  name: `layer-${name.replace(/ /g, "-")}`,
  comment: `${name} (${path}) imports nothing from a higher layer: ${LAYERS.slice(i + 1)
    .map(([n]) => n)
    .join(", ")}`,
  severity: "error",
  from: { path },
  to: { path: LAYERS.slice(i + 1).map(([, p]) => p) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: "no-circular", comment: "no import cycles", severity: "error", from: {}, to: { circular: true } },
    {
      name: "model-view-is-pure",
      comment: "the model view is one pure function: it imports nothing from the store, the agent, the API or the channels",
      severity: "error",
      from: { path: "^lib/model-view/" },
      to: { path: "^lib/(store|agent|api|channels)/" },
    },
    {
      name: "no-lambda-types-in-lib",
      comment: "lib/ is the product, not a Lambda adapter: Lambda's types belong to functions/",
      severity: "error",
      from: { path: "^lib/" },
      to: { path: "(^|/)aws-lambda(/|$)" },
    },
    {
      name: "lib-below-adapters",
      comment: "lib/ never imports its adapters (functions/), the CDK app (infra/), tests or benchmarks",
      severity: "error",
      from: { path: "^lib/" },
      to: { path: "^(functions|infra|test|bench|mutation)/" },
    },
    {
      name: "infra-uses-config-only",
      comment:
        "infra/ imports from lib/ only the configuration (and the errors and validation it throws with), plus the few constants the stack " +
        "must agree with at run time: the API's operations, the turn metrics' names, the database setup version, the tool assets' paths, " +
        "the approvals sweep's event and metrics, the turn recovery's event, the key maintenance's event",
      severity: "error",
      from: { path: "^infra/" },
      to: {
        path: "^lib/",
        pathNot: [
          "^lib/config/",
          "^lib/(errors|validation)[.]ts$",
          "^lib/api/openapi[.]ts$",
          "^lib/queue/turn-metrics[.]ts$",
          "^lib/observability/(turn-outcome-metrics|turn-failure-reason|approval-sweep-metrics|limit-metrics)[.]ts$",
          "^lib/approvals/sweep-event[.]ts$",
          "^lib/agent/turn-recovery-event[.]ts$",
          "^lib/lifecycle/key-maintenance-event[.]ts$",
          "^lib/store/database[.]ts$",
          "^lib/tools/documents/local-document-index[.]ts$",
          "^lib/tools/sql/sqlite-wasm[.]ts$",
        ],
      },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
  },
};
