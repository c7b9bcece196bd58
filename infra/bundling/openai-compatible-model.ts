// Stands in for lib/agent/openai-compatible-model.ts in the Lambda bundles. `MODEL_PROVIDER=openai-compatible`
// is for the local server, against a model on a laptop or a gateway; a deployed stage calls Bedrock.
// The module, `@langchain/openai` and the OpenAI SDK would add about half a megabyte to the api,
// stream and worker bundles for a provider they never construct.

export function createOpenAiCompatibleModel(): never {
  throw new Error("MODEL_PROVIDER=openai-compatible runs on the local server only; a deployed stage calls Bedrock");
}
