// Threadwise console — inspector: the view each model call was sent, beside the durable state it was built from.

import { approvalFacts } from "./approvals.js";
import { $, PREVIEW_CHARS, api, h, n, state, page } from "./shared.js";

async function threadOf(conversationId) {
  if (!state.threads.has(conversationId)) {
    // The working set, and how many finished turns before it were archived (docs/storage.md).
    const { messages, archivedTurns } = await api("GET", `/v1/conversations/${conversationId}/state`);
    state.threads.set(conversationId, Object.assign(messages, { archivedTurns: archivedTurns ?? 0 }));
  }
  return state.threads.get(conversationId);
}

export async function openInspector(turnId, opener) {
  if (opener) state.inspectorOpener = opener;
  const aside = $("inspector");
  aside.hidden = false;
  $("workspace").classList.add("with-inspector");
  $("inspector-body").replaceChildren(h("p", { class: "hint", text: "Loading the turn…" }));
  try {
    const [turn, thread] = await Promise.all([api("GET", `/v1/conversations/${state.conversationId}/turns/${turnId}`), threadOf(state.conversationId)]);
    state.inspector = { turn, thread, callIndex: Math.max(0, turn.calls.length - 1) };
    renderInspector();
    page.renderChat();
  } catch (error) {
    $("inspector-body").replaceChildren(h("p", { class: "error", role: "alert", text: `Could not load the turn: ${error.message}` }));
  }
  $("inspector-title").focus();
}

export function closeInspector(restoreFocus = true) {
  const wasOpen = state.inspector !== null;
  state.inspector = null;
  if (wasOpen) page.renderChat();
  $("inspector").hidden = true;
  $("workspace").classList.remove("with-inspector");
  const opener = state.inspectorOpener && document.querySelector(`.chat-message[data-turn-id="${state.inspectorOpener}"] .inspect-button`);
  if (restoreFocus && opener) opener.focus();
}

/** Why the view left a stored message out, as the console says it (`LeftOutReason` in `lib/model-view/types.ts`). */
const LEFT_OUT = {
  exchange: { fate: "exchange", label: "left out: tool exchange of a finished turn" },
  "outside-window": { fate: "older", label: "left out: older than the finished turns kept" },
  "over-budget": { fate: "budget", label: "left out: dropped to fit the budget" },
  system: { fate: "system", label: "left out: the view has its own system prompt" },
  "before-first-question": { fate: "leading", label: "left out: before the first question" },
  "orphan-tool-result": { fate: "orphan", label: "left out: a tool result without its call" },
  blank: { fate: "blank", label: "left out: nothing to send" },
  "trailing-text": { fate: "trailing", label: "left out: text after the turn's last usable step" },
  "unsupported-type": { fate: "unsupported", label: "left out: a message type the model does not take" },
};

/** The console's label of what the view did with one stored message, from the call's recorded disposition. */
function fateOf(d) {
  if (!d) return { fate: "unrecorded", kind: "omitted", label: "not recorded: this call was made before the view kept what it did" };
  if (d.fate === "sent") return { fate: "sent", kind: "sent", label: "sent as stored" };
  if (d.fate === "repaired") return { fate: "repaired", kind: "sent", label: `sent repaired (${d.repair})` };
  if (d.fate === "condensed") return { fate: d.part, kind: "condensed", label: `sent as the ${d.part} of a Q/A pair` };
  if (d.fate === "notice" && d.notice === "out-of-sight") {
    return { fate: "out-of-sight", kind: "omitted", label: "left out: counted by the out-of-sight notice" };
  }
  if (d.fate === "notice") return { fate: "notice", kind: "notice", label: `replaced by a notice (${d.reason})` };
  const known = LEFT_OUT[d.reason] ?? { fate: "left-out", label: `left out: ${d.reason}` };
  return { ...known, kind: "omitted" };
}

const TURN_SUMMARIES = {
  sent: "active turn: sent whole",
  repaired: "active turn: sent whole",
  question: "finished: condensed to a Q/A pair",
  budget: "finished: dropped to fit the budget",
  older: "finished: older than the turns kept",
  "out-of-sight": "finished: out of sight, counted by the notice",
};

/**
 * What became of each stored message in one call's view, as the view recorded it (`dispositions`);
 * the messages are grouped in turns, each from a user message, only to show them.
 */
function classify(thread, call) {
  const leadingItems = [];
  const turns = [];
  thread.slice(0, call.stats.stateMessages).forEach((message, index) => {
    if (message.role === "user") turns.push({ number: (thread.archivedTurns ?? 0) + turns.length + 1, items: [] });
    (turns.at(-1)?.items ?? leadingItems).push({ message, index, ...fateOf(call.dispositions?.[index]) });
  });
  for (const turn of turns) {
    turn.turnId = turnIdOf(turn.items);
    turn.summary = TURN_SUMMARIES[turn.items[0].fate] ?? "not recorded";
  }
  return { turns, leadingItems };
}

function turnIdOf(items) {
  const id = items[0]?.message.id ?? "";
  return id.endsWith(":user") ? id.slice(0, -":user".length) : null;
}

function renderInspector() {
  const { turn, thread, callIndex } = state.inspector;
  const order = page.turnOrder();
  const number = order.indexOf(turn.turnId) + 1;
  $("inspector-title").textContent = `Turn ${number || "?"}: what the model was sent`;
  const reported = turn.usage ?? { inputTokens: 0, outputTokens: 0 };
  const meta = h(
    "p",
    { class: "inspector-meta", "data-meta": "turn" },
    `${turn.status} · ${turn.calls.length} model call${turn.calls.length === 1 ? "" : "s"}`,
    turn.durationMs !== null ? ` · ${(turn.durationMs / 1000).toFixed(1)} s` : "",
    ` · reported by the model: ${n(reported.inputTokens)} input, ${n(reported.outputTokens)} output tokens`,
    ` · ${cachedShare(reported)} of input read from cache`,
    reported.costUsd !== undefined ? ` · ${dollars(reported.costUsd)}` : "",
  );
  if (turn.calls.length === 0) {
    $("inspector-body").replaceChildren(meta, h("p", { class: "hint", text: "This turn made no model call." }));
    return;
  }
  const tabs = h(
    "div",
    { class: "call-tabs", role: "tablist", "aria-label": "Model calls of this turn" },
    turn.calls.map((call, i) =>
      h("button", {
        type: "button",
        role: "tab",
        id: `call-tab-${i}`,
        class: "call-tab",
        "aria-selected": i === callIndex ? "true" : "false",
        "aria-controls": "call-panel",
        tabindex: i === callIndex ? "0" : "-1",
        text: `Call ${i + 1}${call.toolCalls.length ? ` → ${call.toolCalls.join(", ")}` : " → answer"}`,
        onclick: () => selectCall(i),
        onkeydown: (event) => onTabKey(event, i, turn.calls.length),
      }),
    ),
  );
  const call = turn.calls[callIndex];
  const panel = h(
    "div",
    { id: "call-panel", role: "tabpanel", "aria-labelledby": `call-tab-${callIndex}`, class: "call-panel" },
    renderCall(call, thread, turn),
  );
  $("inspector-body").replaceChildren(meta, ...approvalFacts(h, turn.approvals), tabs, panel);
}

function selectCall(i, focus = false) {
  state.inspector.callIndex = i;
  renderInspector();
  if (focus) $(`call-tab-${i}`).focus();
}

function onTabKey(event, i, count) {
  const next = { ArrowRight: (i + 1) % count, ArrowLeft: (i - 1 + count) % count, Home: 0, End: count - 1 }[event.key];
  if (next === undefined) return;
  event.preventDefault();
  selectCall(next, true);
}

function renderCall(call, thread, turn) {
  const { stats } = call;
  if ((stats.archivedTurns ?? 0) !== (thread.archivedTurns ?? 0)) {
    const text =
      `Earlier turns were archived since this call was made (${n(thread.archivedTurns ?? 0)} now, ${n(stats.archivedTurns ?? 0)} then): ` +
      "the stored messages it was built from are read with GET /v1/conversations/{id}/archive.";
    return h("div", { class: "call" }, h("p", { class: "hint", text }), h("div", { class: "columns" }, renderViewColumn(call)));
  }
  if (thread.length < stats.stateMessages) {
    return h("p", { class: "error", text: "The stored thread is shorter than when this call was made: it was changed or deleted since." });
  }
  const plan = classify(thread, call);
  return h(
    "div",
    { class: "call" },
    renderFacts(call, plan),
    renderBudget(call),
    renderLegend(),
    h("div", { class: "columns" }, renderStateColumn(plan, stats, turn), renderViewColumn(call)),
  );
}

/** The share of a usage's input tokens read from the prompt cache, as a percentage. */
function cachedShare(usage) {
  return `${usage.inputTokens ? Math.round(((usage.cacheReadTokens ?? 0) / usage.inputTokens) * 100) : 0}%`;
}

function dollars(value) {
  return `$${value.toFixed(value < 0.01 ? 5 : 4)}`;
}

const CACHE_POINT_TEXT = {
  system: "tools and system prompt",
  history: "block of finished turns",
  previous: "prefix an earlier call wrote",
  end: "this request, for the next call",
};

/** Where the view asked Bedrock to cache, and what the cache read and wrote for this call. */
function cacheFact(call) {
  const { stats, usage } = call;
  const points = stats.cachePoints ?? [];
  const read = usage?.cacheReadTokens ?? 0;
  const written = usage?.cacheWriteTokens ?? 0;
  const where = points.length
    ? `${points.length} cache point${points.length === 1 ? "" : "s"}: ` +
      points.map((p) => `after message ${p.after + 1} (${CACHE_POINT_TEXT[p.kind]}, ${p.ttl})`).join("; ")
    : "No cache point";
  const estimate = estimateText(stats, usage, call.estimateError);
  return h(
    "li",
    { class: "fact", "data-fact": "cache" },
    `${where}. `,
    h("strong", { text: `${cachedShare(usage ?? { inputTokens: 0 })} of input read from cache` }),
    ` (${n(read)} read, ${n(written)} written, ${n((usage?.inputTokens ?? 0) - read - written)} uncached)`,
    usage?.costUsd !== undefined ? ` · ${dollars(usage.costUsd)}` : "",
    ".",
    estimate,
  );
}

/**
 * The token estimate in words: what the view guessed before sending (cl100k tokens scaled by the
 * ratio learned for this model, plus a safety margin) and how far that was from the model's count.
 */
function estimateText(stats, usage, estimateError) {
  if (stats.estimatedInputTokens === undefined) return "";
  const ratio = stats.tokenEstimate?.ratio;
  const margin = Math.round((stats.tokenEstimate?.margin ?? 0) * 100);
  const how = ratio !== undefined ? ` (cl100k count × ${ratio.toFixed(3)} for this model, plus a ${margin}% safety margin)` : "";
  const text = ` Before sending, the view estimated ${n(stats.estimatedInputTokens)} input tokens${how}`;
  if (estimateError === null || estimateError === undefined || !usage) return `${text}.`;
  const off = Math.abs(estimateError * 100).toFixed(1);
  const side = estimateError < 0 ? "under" : "over";
  return `${text}; the model counted ${n(usage.inputTokens)}, so the estimate was ${off}% ${side}.`;
}

function reasonText(o) {
  return o.reason === "over-budget" ? "replaced to keep the view within its budget" : "over the limit for one tool output";
}

function renderFacts(call, plan) {
  const { stats } = call;
  const items = [...plan.leadingItems, ...plan.turns.flatMap((t) => t.items)];
  const leftOut = items.filter((i) => i.kind === "omitted" && i.fate !== "unrecorded").length;
  const exchange = items.filter((i) => i.fate === "exchange").length;
  const ratio = stats.stateTokens > 0 ? Math.round((stats.viewTokens / stats.stateTokens) * 100) : 100;
  const facts = [
    h(
      "li",
      { class: "fact fact-headline" },
      h("strong", { text: `${n(stats.stateMessages)} stored message${stats.stateMessages === 1 ? "" : "s"}, ${n(stats.stateTokens)} tokens` }),
      " → ",
      h("strong", { text: `${n(stats.viewMessages)} sent, ${n(stats.viewTokens)} tokens` }),
      ` (${ratio}% of the state's tokens)`,
    ),
    h(
      "li",
      { class: "fact", "data-fact": "finished-turns" },
      `Finished turns: ${stats.finishedTurnsInState} in state, ${stats.finishedTurnsKept} condensed into question/answer pairs`,
      stats.finishedTurnsDroppedForBudget ? `, ${stats.finishedTurnsDroppedForBudget} dropped to fit the budget` : "",
      ".",
    ),
    call.dispositions
      ? h(
          "li",
          { class: "fact", "data-fact": "left-out" },
          `Left out of the view: ${leftOut} stored message${leftOut === 1 ? "" : "s"}`,
          exchange ? ` (${exchange} from tool exchanges of finished turns)` : "",
          ".",
        )
      : h("li", { class: "fact", "data-fact": "left-out", text: "This call was recorded before the view kept what it did with each stored message." }),
    cacheFact(call),
  ];
  if (stats.omittedOutputs.length === 0) facts.push(h("li", { class: "fact", "data-fact": "notices", text: "No tool output was replaced by a notice." }));
  for (const o of stats.omittedOutputs) {
    facts.push(
      h(
        "li",
        { class: "fact fact-notice", "data-fact": "notices" },
        h("strong", { text: `${o.toolName} output replaced by a notice` }),
        `: ${n(o.tokens)} tokens, ${reasonText(o)}`,
        o.handle ? ` · stored once as artifact ${o.handle}` : " · kept in the checkpoint only",
        ".",
      ),
    );
  }
  for (const search of conversationSearches(call.view)) {
    facts.push(
      h(
        "li",
        { class: "fact fact-search", "data-fact": "search" },
        h("strong", { text: `Searched earlier turns for "${search.query}"` }),
        search.turns.length
          ? `: found turn${search.turns.length === 1 ? "" : "s"} ${search.turns.join(", ")} (best first), sent in this view.`
          : `: ${search.summary}`,
      ),
    );
  }
  const repairs = Object.entries(stats.repairs ?? {}).filter(([, count]) => count > 0);
  if (repairs.length) facts.push(h("li", { class: "fact", text: `History repairs in the view: ${repairs.map(([k, v]) => `${k} ${v}`).join(", ")}.` }));
  return h("ul", { class: "facts", "aria-label": "What this call was sent" }, facts);
}

const SEARCH_TOOL = "search_conversation";

/** The `search_conversation` calls a view carries with their results: the query and the turns found, best first. */
function conversationSearches(view) {
  const queries = new Map(view.flatMap((m) => (m.toolCalls ?? []).filter((c) => c.name === SEARCH_TOOL).map((c) => [c.id, String(c.args?.query ?? "")])));
  return view
    .filter((m) => m.role === "tool" && m.toolName === SEARCH_TOOL)
    .map((m) => ({
      query: queries.get(m.toolCallId) ?? "",
      turns: [...m.content.matchAll(/^\[Turn (\d+), /gm)].map((match) => match[1]),
      summary: m.content.split("\n")[0],
    }));
}

function renderLegend() {
  const entry = (kind, text) => h("li", {}, h("span", { class: `badge badge-${kind}`, text }));
  return h(
    "ul",
    { class: "legend", "aria-label": "Legend" },
    entry("sent", "sent as stored"),
    entry("condensed", "condensed: question/answer pair"),
    entry("notice", "replaced by a notice"),
    entry("omitted", "in state only, left out of the view"),
  );
}

function renderBudget(call) {
  const { stats, usage } = call;
  const rows = [
    { key: "state", label: "Stored thread", value: stats.stateTokens, detail: `${n(stats.stateTokens)}` },
    {
      key: "view",
      label: "Model view",
      value: stats.viewTokens,
      extra: stats.toolSchemaTokens,
      detail: `${n(stats.viewTokens)}${stats.toolSchemaTokens ? ` + ${n(stats.toolSchemaTokens)} tool schemas` : ""}`,
    },
  ];
  if (usage?.inputTokens) {
    rows.push({ key: "input", label: "Reported input", value: usage.inputTokens, detail: `${n(usage.inputTokens)} (${cachedShare(usage)} from cache)` });
  }
  if (usage?.outputTokens) rows.push({ key: "output", label: "Reported output", value: usage.outputTokens, detail: n(usage.outputTokens) });
  const scale = Math.max(stats.budget, ...rows.map((r) => r.value + (r.extra ?? 0))) || 1;
  const pct = (value) => `${Math.min(100, (value / scale) * 100).toFixed(2)}%`;
  const budgetAt = pct(stats.budget);
  return h(
    "figure",
    { class: "budget" },
    h("figcaption", {}, "Tokens against the view budget of ", h("strong", { text: n(stats.budget) }), " model tokens (red line)"),
    rows.map((row) => {
      const fill = h("span", { class: `bar-fill bar-${row.key}` });
      fill.style.width = pct(row.value);
      const extra = row.extra ? h("span", { class: "bar-fill bar-schema" }) : null;
      if (extra) extra.style.width = pct(row.extra);
      const marker = h("span", { class: "bar-budget" });
      marker.style.left = budgetAt;
      const share = stats.budget ? Math.round(((row.value + (row.extra ?? 0)) / stats.budget) * 100) : 0;
      return h(
        "div",
        { class: "bar-row", "data-bar": row.key },
        h("span", { class: "bar-label", text: row.label }),
        h(
          "span",
          {
            class: "bar-track",
            role: "img",
            "aria-label": `${row.label}: ${n(row.value)} tokens${row.extra ? ` plus ${n(row.extra)} for tool schemas` : ""}, ${share}% of the budget`,
          },
          fill,
          extra,
          marker,
        ),
        h("span", { class: "bar-value", text: row.detail }),
      );
    }),
  );
}

/** A message's text, cut to a preview with a button for the rest. */
function messageBody(text) {
  if (text.length <= PREVIEW_CHARS) return h("pre", { class: "msg-text", text });
  const pre = h("pre", { class: "msg-text", text: `${text.slice(0, PREVIEW_CHARS)}…` });
  let open = false;
  const toggle = h("button", {
    type: "button",
    class: "button-quiet msg-more",
    "aria-expanded": "false",
    text: `Show all ${n(text.length)} characters`,
    onclick: () => {
      open = !open;
      pre.textContent = open ? text : `${text.slice(0, PREVIEW_CHARS)}…`;
      toggle.textContent = open ? "Show less" : `Show all ${n(text.length)} characters`;
      toggle.setAttribute("aria-expanded", String(open));
    },
  });
  return h("div", {}, pre, toggle);
}

function toolCallList(message) {
  if (!message.toolCalls?.length) return null;
  return h(
    "ul",
    { class: "msg-calls" },
    message.toolCalls.map((c) => h("li", {}, h("code", { text: `${c.name} ${JSON.stringify(c.args)}` }))),
  );
}

const ROLE_NAMES = { system: "System", user: "User", assistant: "Assistant", tool: "Tool result" };

function roleName(message) {
  const name = ROLE_NAMES[message.role] ?? message.role;
  return message.role === "tool" && message.toolName ? `${name} · ${message.toolName}` : name;
}

function renderStateColumn(plan, stats, turn) {
  const entries = [];
  if (plan.leadingItems.length) entries.push(h("li", { class: "turn-head", text: "Before the first question" }), plan.leadingItems.map(stateItem));
  for (const t of plan.turns) {
    const current = t.turnId === turn.turnId;
    entries.push(
      h(
        "li",
        { class: `turn-head${current ? " turn-current" : ""}`, "data-turn": t.number },
        h("strong", { text: `Turn ${t.number}` }),
        current ? " (this turn)" : "",
        ` · ${t.summary}`,
      ),
      t.items.map(stateItem),
    );
  }
  return h(
    "section",
    { class: "column column-state", "aria-labelledby": "state-title" },
    h(
      "h3",
      { id: "state-title" },
      "Durable state ",
      h("span", {
        class: "column-sub",
        text:
          `checkpointed working set · ${n(stats.stateMessages)} message${stats.stateMessages === 1 ? "" : "s"} · ${n(stats.stateTokens)} tokens` +
          (stats.archivedTurns ? ` · ${n(stats.archivedTurns)} earlier turn${stats.archivedTurns === 1 ? "" : "s"} archived` : ""),
      }),
    ),
    h("ol", { class: "msg-list" }, entries.flat()),
  );
}

function stateItem(item) {
  const { message, fate, kind, label } = item;
  const badges = [h("span", { class: `badge badge-${kind}`, text: label })];
  if (message.artifact) {
    badges.push(
      h("span", {
        class: "badge badge-artifact",
        text: `artifact ${message.artifact.handle}: ${n(message.artifact.bytes)} bytes, ${n(message.artifact.tokens)} tokens, kept out of the checkpoint`,
      }),
    );
  }
  return h(
    "li",
    { class: `msg msg-${kind}`, "data-fate": fate, "data-role": message.role },
    h(
      "div",
      { class: "msg-head" },
      h("span", { class: "msg-role", text: roleName(message) }),
      h("span", { class: "msg-tokens", text: `${n(message.tokens)} tokens` }),
    ),
    h("div", { class: "msg-badges" }, badges),
    message.content ? messageBody(message.content) : null,
    toolCallList(message),
  );
}

/** A view message's tokens as the view counted them, tool calls included; calls recorded before the count was kept have none. */
function viewTokens(message) {
  return message.tokens === undefined ? "tokens not recorded" : `${n(message.tokens)} tokens`;
}

/** The stored messages' dispositions by the view message they went to (the out-of-sight notice aside). */
function dispositionsByViewIndex(call) {
  const byIndex = new Map();
  for (const d of call.dispositions ?? []) {
    if (d.viewIndex !== undefined && d.notice !== "out-of-sight" && !byIndex.has(d.viewIndex)) byIndex.set(d.viewIndex, d);
  }
  return byIndex;
}

function renderViewColumn(call) {
  const { stats, view } = call;
  const omitted = new Map(stats.omittedOutputs.map((o) => [o.toolCallId, o]));
  const standsFor = dispositionsByViewIndex(call);
  const cachePoints = new Map((stats.cachePoints ?? []).map((p) => [p.after, p]));
  const items = view.map((message, i) => {
    const d = standsFor.get(i);
    const previous = standsFor.get(i - 1);
    let kind = "sent";
    let label = "active turn";
    if (i === 0 && message.role === "system") label = "system prompt (from the policy)";
    else if (d?.fate === "condensed") {
      kind = "condensed";
      label = `${d.part} of turn ${d.turn + 1} (Q/A pair)`;
    } else if (!d && previous?.fate === "condensed" && previous.part === "question") {
      kind = "condensed";
      label = `answer of turn ${previous.turn + 1} (Q/A pair): a stub, the turn ended without one`;
    } else if (message.role === "tool" && message.toolName === SEARCH_TOOL) {
      const found = conversationSearches([message]).at(0)?.turns ?? [];
      label = found.length ? `search results: turn${found.length === 1 ? "" : "s"} ${found.join(", ")}` : "search results: none";
    } else if (message.role === "tool" && omitted.has(message.toolCallId)) {
      const o = omitted.get(message.toolCallId);
      kind = "notice";
      label = `notice standing for the ${o.toolName} output (${o.reason})`;
    }
    const point = cachePoints.get(i);
    return h(
      "li",
      { class: `msg msg-${kind}${point ? " msg-cache-point" : ""}`, "data-kind": kind, "data-role": message.role, "data-cache-point": point?.kind },
      h("div", { class: "msg-head" }, h("span", { class: "msg-role", text: roleName(message) }), h("span", { class: "msg-tokens", text: viewTokens(message) })),
      h("div", { class: "msg-badges" }, h("span", { class: `badge badge-${kind}`, text: label })),
      message.content ? messageBody(message.content) : null,
      toolCallList(message),
      point
        ? h("div", { class: "cache-point", text: `cache point: ${CACHE_POINT_TEXT[point.kind]} · ${n(point.prefixTokens)} tokens up to here · ${point.ttl}` })
        : null,
    );
  });
  return h(
    "section",
    { class: "column column-view", "aria-labelledby": "view-title" },
    h(
      "h3",
      { id: "view-title" },
      "Model view ",
      h("span", {
        class: "column-sub",
        text: `sent for call ${call.index + 1} · ${n(stats.viewMessages)} message${stats.viewMessages === 1 ? "" : "s"} · ${n(stats.viewTokens)} tokens`,
      }),
    ),
    h("ol", { class: "msg-list" }, items),
  );
}
