// Stands in for LangSmith's tracing `Client` (`langsmith/lib/client.mjs` with the REST client and
// OpenTelemetry translator behind it, ~200 KB minified) in the Lambda bundles. LangChain imports
// LangSmith for two things: tracing runs to LangSmith, which the functions never do, and
// `RunTree`, which it uses on every runnable call to carry the config through AsyncLocalStorage.
// `RunTree` stays the real one; it only constructs a shared `Client` and calls it when tracing.
/** The environment switches with which LangSmith would trace. */
export const LANGSMITH_TRACING_VARIABLES: readonly string[] = ["LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING", "LANGCHAIN_TRACING_V2"];

export class Client {
  constructor() {
    // Tracing switched on in a bundle would otherwise fail somewhere inside a callback, quietly.
    const enabled = LANGSMITH_TRACING_VARIABLES.filter((name) => process.env[name] === "true");
    if (enabled.length > 0) throw new Error(`LangSmith tracing is not bundled in the Lambda functions; unset ${enabled.join(", ")}`);
  }
}
