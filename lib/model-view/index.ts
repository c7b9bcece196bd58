export { buildModelView } from "./build-model-view.js";
export { countMessagesTokens, countMessageTokens, countTextTokens } from "./token-counter.js";
export type { ModelView, ModelViewPolicy, ModelViewStats, OmittedOutput } from "./types.js";
