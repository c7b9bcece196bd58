import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { RemoveMessage, type AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { Annotation, END, interrupt, MessagesAnnotation, REMOVE_ALL_MESSAGES, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";
import type { ModelPrice } from "../config/model-config.js";
import {
  buildModelView,
  countTextTokens,
  estimateError,
  ledgerAfterTurns,
  standingAfterTurns,
  summaryAfterTurns,
  EMPTY_OUT_OF_SIGHT_SUMMARY,
  type OutOfSightSummary,
  type StandingEntry,
  stampTokenCount,
  TokenCalibration,
  withCachePoints,
  type LedgerEntry,
  type ModelViewPolicy,
} from "../model-view/index.js";
import { ModelCallLimitError } from "../errors.js";
import { compactDispositions, toViewMessages, type ModelCallRecord } from "../store/turn-record.js";
import { approvalIdOf } from "../store/approval-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { TurnRecordWriter } from "./turn-record-writer.js";
import type { Caller } from "../auth/principal.js";
import type { StructuredLogger } from "../logger.js";
import type { ModelTokenCounter } from "./bedrock-token-counter.js";
import { genAiProviderOf, incompleteAnswerError, modelCallError } from "./chat-model.js";
import { traceModelCall, traceToolCall } from "../observability/tracing.js";
import type { FaultInjector } from "./fault-points.js";
import { finishReasonsOf, reportedUsage } from "./model-usage.js";
import type { ToolCallRequest, ToolRunner } from "./tool-runner.js";
import { notRunMessage, withEditedCalls, type ApprovalRequest, type ApprovalResume, type PendingCall } from "./approval-gate.js";
import { currentTurnMessages } from "./approval-context.js";
import type { FunctionTool } from "./local-chat-model.js";
import type { TurnEventSink } from "../events/turn-event-recorder.js";
import { modelMessageId } from "../events/turn-event-types.js";
import type { TurnAdmission } from "../limits/turn-admission.js";
import type { TurnArchiveStore } from "../store/turn-archive-store.js";
import { archivePlan } from "./working-set.js";

/**
 * The thread's state: its working set of messages, and how many finished turns were archived out of
 * it before its first message (0 for a thread that never archived, as every thread written before).
 */
export const ThreadState = Annotation.Root({
  ...MessagesAnnotation.spec,
  archivedTurns: Annotation<number>({ reducer: (_previous, next) => next, default: () => 0 }),
  /**
   * The time anchors the archived turns' queries resolved (`ledgerAfterTurns`), bounded by the
   * policy's `parameterLedger`: the view shows them after the turns left (empty for a thread written before).
   */
  parameterLedger: Annotation<LedgerEntry[]>({ reducer: (_previous, next) => next, default: () => [] }),
  /** The archived turns' standing statements (`standingAfterTurns`), bounded by the policy's `standingLedger` (empty for a thread written before). */
  standingLedger: Annotation<StandingEntry[]>({ reducer: (_previous, next) => next, default: () => [] }),
  /** What the archived turns were about (`summaryAfterTurns`), for the out-of-sight notice (empty for a thread written before). */
  outOfSightSummary: Annotation<OutOfSightSummary>({ reducer: (_previous, next) => next, default: () => EMPTY_OUT_OF_SIGHT_SUMMARY }),
});
type State = typeof ThreadState.State;

/** Per-invocation context: passed as LangGraph `context`, which is never checkpointed. */
export type TurnContext = {
  turnId: string;
  conversationId: string;
  caller: Caller;
  /** The turn's fence: tools write under it. */
  fence: WriteFence;
  /** Model calls the turn may make, counted from state, so a resumed or retried turn cannot exceed them. */
  maxModelCalls: number;
  /** Where each model call and the turn's step are recorded, under the turn's fence (`TurnRecordWriter`). */
  record: Pick<TurnRecordWriter, "modelCall" | "progress">;
  /** Where the turn's events go (progress, tools, text deltas); absent, the model is not streamed. */
  events?: TurnEventSink;
  /** The hand-off deadline: checked before each step begins (a model call, a run of tools); a step under way finishes. Default: none. */
  deadline?: AbortSignal;
};

export interface AgentGraphOptions {
  model: BaseChatModel;
  tools: ToolRunner;
  checkpointer: BaseCheckpointSaver;
  policy: Omit<ModelViewPolicy, "toolSchemaTokens" | "tokenEstimate">;
  /** The model's id, for its token calibration and price. Default: "local". */
  modelId?: string;
  /** Learns the model's tokens per local token; the budget is kept in the model's tokens. Default: one per graph (per container). */
  calibration?: TokenCalibration;
  /** The model's price, for each call's cost. Default: none (no cost recorded). */
  price?: ModelPrice;
  /** Whether the model takes Bedrock cache points (`ChatBedrockConverse` does, the local model does not). Default: false. */
  sendCachePoints?: boolean;
  /** Counts a view in the model's tokens (Bedrock CountTokens) before the model's first call in this container. Default: none. */
  countTokens?: ModelTokenCounter;
  /** Budgets per tenant and user: each call is reserved through the turn's admission before it is made and settled after (docs/limits.md). Default: none. */
  limits?: Pick<TurnAdmission, "reserveCall">;
  /** Test-only crash points; absent in production. */
  faults?: FaultInjector;
  /** Each model call is logged as numbers (tokens, sizes, durations), never contents. */
  logger?: StructuredLogger;
  /**
   * Where finished turns before the view's window go, so the thread keeps a bounded working set
   * (`lib/agent/working-set.ts`). Default: none; the thread keeps every message.
   */
  archive?: Pick<TurnArchiveStore, "archive">;
}

/** Index of this model call within the active turn: the AI messages since the latest user message. */
function callIndex(messages: readonly BaseMessage[]): number {
  let count = 0;
  for (let i = messages.length - 1; i >= 0 && messages[i].getType() !== "human"; i--) {
    if (messages[i].getType() === "ai") count++;
  }
  return count;
}

/**
 * Makes a model call stream (`lc_prefer_streaming`: LangChain then calls the model's stream,
 * ConverseStream for Bedrock, and returns the whole message with its usage) and hands each text
 * delta to the turn's events. Awaited, so every delta is out before the call returns.
 */
class TextDeltaHandler extends BaseCallbackHandler {
  name = "threadwise_text_deltas";
  lc_prefer_streaming = true;

  constructor(
    private readonly sink: TurnEventSink,
    private readonly modelCall: number,
  ) {
    super({ _awaitHandler: true });
  }

  override handleLLMNewToken(token: string): void {
    this.sink.text(this.modelCall, token);
  }
}

function turnContext(config: LangGraphRunnableConfig): TurnContext {
  const context = config.context as TurnContext | undefined;
  if (!context?.turnId) throw new Error("the agent graph needs a turn context");
  return context;
}

/**
 * The agent graph: an agent node that builds the model view right before each model call,
 * and a tool node. Compile once per container; every invocation rehydrates from the checkpointer.
 */
export function createAgentGraph(options: AgentGraphOptions) {
  const { model, tools, checkpointer, policy, faults, logger, price, countTokens } = options;
  const modelId = options.modelId ?? "local";
  const provider = genAiProviderOf(model);
  const { maxTokens, temperature } = model as { maxTokens?: number; temperature?: number };
  const calibration = options.calibration ?? new TokenCalibration();
  let countTokensAvailable = countTokens !== undefined;
  // A caller's tool set rarely changes between calls; its schemas are not tokenized on each one.
  const schemaTokenCounts = new Map<string, number>();
  const schemaTokens = (offered: FunctionTool[]): number => {
    if (offered.length === 0) return 0;
    const json = JSON.stringify(offered);
    let tokens = schemaTokenCounts.get(json);
    if (tokens === undefined) schemaTokenCounts.set(json, (tokens = countTextTokens(json)));
    return tokens;
  };

  const buildView = (state: State, toolSchemaTokens: number) =>
    buildModelView(
      state.messages,
      { ...policy, toolSchemaTokens, tokenEstimate: calibration.estimate(modelId) },
      {
        archivedTurns: state.archivedTurns,
        parameterLedger: state.parameterLedger,
        standingLedger: state.standingLedger,
        outOfSight: state.outOfSightSummary,
      },
    );

  /** The view within the budget in the model's tokens; a model not seen yet in this container is first measured with CountTokens, if given. */
  async function calibratedView(state: State, offered: FunctionTool[], toolSchemaTokens: number) {
    const view = buildView(state, toolSchemaTokens);
    if (!countTokens || !countTokensAvailable || calibration.seen(modelId) > 0) return view;
    try {
      calibration.observe(modelId, view.stats.viewTokens + toolSchemaTokens, await countTokens(view.messages, offered));
    } catch (error) {
      // Not every model has CountTokens; reported usage calibrates from the first call instead.
      countTokensAvailable = false;
      logger?.warn("count tokens unavailable", { error: error instanceof Error ? error.name : "unknown" });
      return view;
    }
    return buildView(state, toolSchemaTokens);
  }

  /**
   * Archives the finished turns before the view's window, once a block of them has gathered:
   * written to the archive first (idempotent by turn), then removed from the thread, so a crash
   * between the two archives them again and loses nothing.
   */
  async function archiveTurns(state: State, config: LangGraphRunnableConfig) {
    const plan = options.archive ? archivePlan(state.messages, state.archivedTurns, policy) : undefined;
    if (!plan || !options.archive) return {};
    const ctx = turnContext(config);
    ctx.deadline?.throwIfAborted();
    await options.archive.archive(plan.turns, ctx.fence);
    faults?.at("after-archive");
    // The archived turns' time anchors stay in state, so the view still shows them (the same ledger it showed before they left).
    const parameterLedger = policy.parameterLedger ? ledgerAfterTurns(state.parameterLedger ?? [], plan.turns, policy.parameterLedger) : [];
    const standingLedger = policy.standingLedger ? standingAfterTurns(state.standingLedger ?? [], plan.turns, policy.standingLedger) : [];
    const outOfSightSummary = summaryAfterTurns(state.outOfSightSummary ?? EMPTY_OUT_OF_SIGHT_SUMMARY, plan.turns);
    logger?.info("turns archived", {
      turnId: ctx.turnId,
      turns: plan.turns.length,
      archivedTurns: plan.archivedTurns,
      keptMessages: plan.kept.length,
      ledgerEntries: parameterLedger.length,
    });
    return {
      messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...plan.kept],
      archivedTurns: plan.archivedTurns,
      parameterLedger,
      standingLedger,
      outOfSightSummary,
    };
  }

  /** A turn starts by archiving when a block of turns is due, else with the model. */
  function start(state: State): "archive" | "agent" {
    return options.archive && archivePlan(state.messages, state.archivedTurns, policy) ? "archive" : "agent";
  }

  /** The caller's tools: the runner itself, or the one it resolves for the caller (a tenant's MCP tools). */
  function toolsOf(caller: Caller): Promise<ToolRunner> | ToolRunner {
    return tools.forCaller ? tools.forCaller(caller) : tools;
  }

  async function agent(state: State, config: LangGraphRunnableConfig) {
    const ctx = turnContext(config);
    ctx.deadline?.throwIfAborted();
    const index = callIndex(state.messages);
    if (index >= ctx.maxModelCalls) {
      throw new ModelCallLimitError(`the turn reached its limit of ${ctx.maxModelCalls} model calls`, ctx.maxModelCalls);
    }
    const offered = (await toolsOf(ctx.caller)).toolSpecs(ctx.caller);
    const toolSchemaTokens = schemaTokens(offered);
    const view = await calibratedView(state, offered, toolSchemaTokens);
    await ctx.record.progress({ step: "model", modelCalls: index });
    await ctx.events?.emit({ type: "progress", step: "model", modelCall: index });
    const bound = offered.length && model.bindTools ? model.bindTools(offered) : model;
    const startedAt = new Date();
    const sent = options.sendCachePoints ? withCachePoints(view.messages, view.stats.cachePoints) : view.messages;
    const callbacks = ctx.events ? [new TextDeltaHandler(ctx.events, index)] : undefined;
    const estimate = { turnId: ctx.turnId, principal: ctx.caller.principal, call: index, estimatedInputTokens: view.stats.estimatedInputTokens };
    const reservation = await options.limits?.reserveCall(estimate);
    // One `chat <model>` span per call (docs/operations.md, "Tracing"): settings and token counts, never the messages.
    const span = { provider, model: modelId, conversationId: ctx.conversationId, maxTokens, temperature, stream: callbacks !== undefined };
    const call = () =>
      (bound.invoke(sent, { signal: config.signal, callbacks }) as Promise<AIMessage>)
        .then((answer) => {
          const incomplete = incompleteAnswerError(provider, answer);
          if (incomplete) throw incomplete;
          return answer;
        })
        .catch(async (error: unknown) => {
          await reservation?.release().catch(() => undefined);
          throw modelCallError(error);
        });
    const response = await traceModelCall(span, call, (answer) => ({ ...reportedUsage(answer), finishReasons: finishReasonsOf(answer) }));
    const usage = reportedUsage(response, price);
    await reservation?.settle({ ...usage, cacheReadTokens: usage.cacheReadTokens ?? 0, cacheWriteTokens: usage.cacheWriteTokens ?? 0 });
    calibration.observe(modelId, view.stats.viewTokens + toolSchemaTokens, usage.inputTokens);
    const record: ModelCallRecord = {
      turnId: ctx.turnId,
      index,
      startedAt,
      durationMs: Date.now() - startedAt.getTime(),
      view: toViewMessages(view.messages),
      stats: view.stats,
      dispositions: compactDispositions(view.dispositions),
      usage,
      ...(usage.inputTokens > 0 && { estimateError: estimateError(view.stats.estimatedInputTokens, usage.inputTokens) }),
      toolCalls: (response.tool_calls ?? []).map((c) => c.name),
    };
    await ctx.record.modelCall(record);
    logger?.info("model call", {
      turnId: record.turnId,
      call: record.index,
      durationMs: record.durationMs,
      stateMessages: view.stats.stateMessages,
      stateTokens: view.stats.stateTokens,
      viewMessages: view.stats.viewMessages,
      viewTokens: view.stats.viewTokens,
      budget: view.stats.budget,
      finishedTurnsKept: view.stats.finishedTurnsKept,
      omittedOutputs: view.stats.omittedOutputs.length,
      buildMs: Math.round(view.stats.buildMs * 1000) / 1000,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cachePoints: view.stats.cachePoints.length,
      cacheReadTokens: usage.cacheReadTokens,
      cacheWriteTokens: usage.cacheWriteTokens,
      estimatedInputTokens: view.stats.estimatedInputTokens,
      tokenMargin: view.stats.tokenEstimate.margin,
      ...(record.estimateError !== undefined && { estimateError: record.estimateError }),
      ...(usage.costUsd !== undefined && { costUsd: usage.costUsd }),
      toolCalls: record.toolCalls.length,
    });
    faults?.at("after-model-call");
    // The id its streamed text was sent under, whatever the provider named it.
    response.id = modelMessageId(ctx.turnId, index);
    return { messages: [stampTokenCount(response)] };
  }

  /**
   * Runs the model's tool calls. Calls a policy holds wait first, all of one response together in
   * one interrupt (so parallel calls never race for interrupt ids); nothing runs before the
   * graph is resumed with an outcome for each. A call that was approved runs as given, an edited
   * one with its new arguments (and the model's message is rewritten to show them), a rejected or
   * expired one not at all: the model reads why. Effects go through the registry's idempotency guard.
   */
  async function runTools(state: State, config: LangGraphRunnableConfig) {
    const ctx = turnContext(config);
    ctx.deadline?.throwIfAborted();
    const last = state.messages[state.messages.length - 1] as AIMessage;
    const calls: ToolCallRequest[] = (last.tool_calls ?? []).map((c) => ({ id: c.id ?? "", name: c.name, args: c.args }));
    const turn = currentTurnMessages(state.messages);
    const tools = await toolsOf(ctx.caller);
    const waiting: PendingCall[] = calls.flatMap((call) => {
      const approvers = tools.approversFor(call, ctx.caller, turn);
      if (!approvers) return [];
      const context = tools.approvalContext?.(turn);
      const approvalId = approvalIdOf(ctx.conversationId, ctx.turnId, call.id);
      return [{ approvalId, toolCallId: call.id, tool: call.name, args: call.args, approvers, ...(context && { context }) }];
    });
    const outcomes = waiting.length > 0 ? interrupt<ApprovalRequest, ApprovalResume>({ approvals: waiting }).outcomes : {};
    faults?.at("before-tool-effect");
    await ctx.record.progress({ step: "tool", tool: calls.map((c) => c.name).join(", "), modelCalls: callIndex(state.messages) });
    const edits = new Map<string, Record<string, unknown>>();
    const results = await Promise.all(
      calls.map(async (call) => {
        const held = waiting.find((w) => w.toolCallId === call.id);
        const outcome = held ? outcomes[held.approvalId] : undefined;
        if (held && outcome?.kind !== "approve" && outcome?.kind !== "edit") return notRunMessage(call, outcome);
        if (outcome?.kind === "edit") edits.set(call.id, outcome.args);
        await ctx.events?.emit({ type: "tool_started", tool: call.name, toolCallId: call.id });
        const result = await traceToolCall(
          { name: call.name, id: call.id, conversationId: ctx.conversationId },
          () =>
            tools.run(
              { ...call, args: outcome?.kind === "edit" ? outcome.args : call.args },
              { conversationId: ctx.conversationId, turnId: ctx.turnId, toolCallId: call.id, caller: ctx.caller, signal: config.signal, fence: ctx.fence },
            ),
          (message) => message.status === "error",
        );
        await ctx.events?.emit({ type: "tool_finished", tool: call.name, toolCallId: call.id, status: result.status === "error" ? "error" : "success" });
        return result;
      }),
    );
    faults?.at("after-tool-effect");
    return { messages: [...(edits.size > 0 ? [withEditedCalls(last, edits)] : []), ...results] };
  }

  function route(state: State): "tools" | typeof END {
    const last = state.messages[state.messages.length - 1] as AIMessage;
    return last.tool_calls?.length ? "tools" : END;
  }

  return new StateGraph(ThreadState)
    .addNode("archive", archiveTurns)
    .addNode("agent", agent)
    .addNode("tools", runTools)
    .addConditionalEdges(START, start, ["archive", "agent"])
    .addEdge("archive", "agent")
    .addConditionalEdges("agent", route, ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer });
}

export type AgentGraph = ReturnType<typeof createAgentGraph>;
