import { withRuntime } from "./shared/runtime.js";
import { webhook } from "./shared/webhook.js";

/** Bot Framework activities: verify the token, dedupe, enqueue; the worker replies through the Bot Connector. */
export const handler = withRuntime(webhook("teams"));
