import { withRuntime } from "./shared/runtime.js";
import { webhook } from "./shared/webhook.js";

/** Slack Events API: verify the signature, dedupe, enqueue, answer within Slack's three seconds. */
export const handler = withRuntime(webhook("slack"));
