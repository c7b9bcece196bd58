// Stands in for the `langsmith` package root in the Lambda bundles, which re-exports LangSmith's
// generated REST client besides the two names @langchain/core imports from it. See
// langsmith-client.ts for why the tracing client is left out.
export { RunTree } from "langsmith/run_trees";
export { Client } from "./langsmith-client.js";
