import {
  BudgetExhaustedError,
  ConflictError,
  ContextBudgetExceededError,
  ModelBusyError,
  PayloadTooLargeError,
  RateLimitedError,
  ServiceUnavailableError,
  ValidationError,
} from "../errors.js";

/** What the thread hears, once per turn, when the model is busy and the worker will try again. */
export function modelBusyNotice(): string {
  return "I'm busy right now and will answer in a moment.";
}

/**
 * The short, honest message a user gets in the thread when their turn fails: what happened
 * in plain words and what they can do, never internals.
 */
export function turnFailureMessage(error: unknown, channel: "slack" | "teams"): string {
  const fresh = channel === "slack" ? "start a new thread" : "start a new conversation";
  if (error instanceof BudgetExhaustedError) {
    const who = error.limit.startsWith("tenant.") ? "Your organization's" : "Your";
    const what = error.limit.endsWith("usdPerMonth") ? "monthly" : "daily";
    const resets = `${error.resetsAt.toISOString().slice(0, 16).replace("T", " ")} UTC`;
    return `${who} ${what} budget for me is used up, so I won't answer until it resets at ${resets}. I'll stay quiet about it until then.`;
  }
  if (error instanceof RateLimitedError) {
    return "You're sending me messages faster than I may answer them. Please wait a minute and send this one again.";
  }
  if (error instanceof ConflictError) {
    return "I'm still answering an earlier message here. Please send this one again once that answer arrives.";
  }
  if (error instanceof ContextBudgetExceededError) {
    return `This conversation has grown too long for me to answer in. Please ${fresh} and ask again.`;
  }
  if (error instanceof PayloadTooLargeError) {
    return `That message is too long for me (the limit is ${error.limit.toLocaleString("en-US")} characters). Please shorten it and send it again.`;
  }
  if (error instanceof ValidationError) {
    return "I couldn't accept that message. Please rephrase it and send it again.";
  }
  if (error instanceof ModelBusyError) {
    return "I'm too busy to answer right now. Please send your message again in a few minutes.";
  }
  if (error instanceof ServiceUnavailableError) {
    return "I couldn't reach a service I need to answer right now. Please try again in a few minutes.";
  }
  return "Sorry, something went wrong and I couldn't answer this message. Please try again.";
}
