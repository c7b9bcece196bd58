// Threadwise console — chat.

import { $, api, breakableText, guard, h, state, ApiError, POLL_MS, page } from "./shared.js";

/** Turn ids in the order their first message was recorded. */
export function turnOrder() {
  const ids = [];
  for (const m of state.messages) if (!ids.includes(m.turnId)) ids.push(m.turnId);
  return ids;
}

/** The turn an edit or a regeneration would replace: the one of the last message not already replaced. */
function lastTurnId() {
  for (let i = state.messages.length - 1; i >= 0; i--) if (!state.messages[i].replacedBy) return state.messages[i].turnId;
  return null;
}

/** How a replaced message is marked: an answer by a newer one; a question by an edit, or asked again (regenerated) when its text is unchanged. */
function replacedLabel(message, isAnswer) {
  if (isAnswer) return "replaced by a newer answer";
  const again = state.messages.find((m) => m.turnId === message.replacedBy && m.role === "user");
  return again && again.content === message.content ? "asked again (regenerated)" : "replaced by an edit";
}

/** Empties the progress line: a turn ended, however it ended. */
export function clearProgress() {
  const box = $("progress");
  box.replaceChildren();
  delete box.dataset.step;
  delete box.dataset.tool;
}

export function renderChat() {
  const current = state.conversations.find((c) => c.conversationId === state.conversationId);
  const title = current ? page.conversationLabel(current) : state.conversationId ? "Conversation" : "Pick or start a conversation";
  $("chat-title").replaceChildren(...breakableText(title));
  $("chat-title").title = title;
  page.renderEmptyState();
  const order = turnOrder();
  const last = lastTurnId();
  // A turn without an answer (failed or interrupted) is inspected from its question.
  const answered = new Set(state.messages.filter((m) => m.role === "assistant").map((m) => m.turnId));
  $("messages").replaceChildren(
    ...state.messages.map((m) => {
      const turnNumber = order.indexOf(m.turnId) + 1;
      const isAnswer = m.role === "assistant";
      const inspected = state.inspector?.turn.turnId === m.turnId;
      const replaced = Boolean(m.replacedBy);
      const isLast = m.turnId === last && !state.running;
      return h(
        "li",
        { class: `chat-message ${m.role}${inspected ? " inspected" : ""}${replaced ? " replaced" : ""}`, "data-turn-id": m.turnId },
        h(
          "div",
          { class: "chat-meta" },
          h("span", { class: "chat-role", text: isAnswer ? "Assistant" : "You" }),
          h("span", { class: "chat-turn", text: `turn ${turnNumber}` }),
          replaced ? h("span", { class: "chat-replaced", text: replacedLabel(m, isAnswer) }) : null,
        ),
        h("div", { class: "chat-text", text: m.content }),
        h(
          "div",
          { class: "chat-actions" },
          isAnswer || !answered.has(m.turnId)
            ? h("button", {
                type: "button",
                class: "inspect-button",
                "aria-controls": "inspector",
                "aria-label": `Inspect turn ${turnNumber}: what the model was sent`,
                "aria-pressed": inspected ? "true" : "false",
                text: "Inspect turn",
                onclick: () => page.openInspector(m.turnId, m.turnId),
              })
            : null,
          isLast && !isAnswer
            ? h("button", { type: "button", class: "edit-button", "aria-label": "Edit your last question", text: "Edit", onclick: () => startEditing(m) })
            : null,
          isLast && isAnswer
            ? h("button", {
                type: "button",
                class: "regenerate-button",
                "aria-label": "Regenerate the last answer",
                text: "Regenerate",
                onclick: guard(() => regenerate(m.turnId), "chat-error"),
              })
            : null,
        ),
      );
    }),
  );
  const enabled = Boolean(state.conversationId) && !state.running;
  $("composer-input").disabled = !enabled;
  $("send").disabled = !enabled;
  $("send").textContent = state.editing ? "Resend" : "Send";
  $("editing").hidden = !state.editing;
  // One turn at a time: switching away mid-turn would leave its progress nowhere to show.
  $("new-conversation").disabled = state.running;
  for (const button of document.querySelectorAll(".conversation button")) button.disabled = state.running;
  const log = $("messages");
  // Follow the conversation as it grows, not when only the inspected turn changed.
  if (log.childElementCount !== renderChat.shown) log.scrollTop = log.scrollHeight;
  renderChat.shown = log.childElementCount;
}

/** Puts the last question in the composer; sending it replaces that turn. */
function startEditing(message) {
  state.editing = message.turnId;
  $("composer-input").value = message.content;
  renderChat();
  $("composer-input").focus();
}

export function stopEditing() {
  state.editing = null;
  $("composer-input").value = "";
  renderChat();
  $("composer-input").focus();
}

async function regenerate(turnId) {
  const question = state.messages.find((m) => m.turnId === turnId && m.role === "user");
  await runTurn(`/v1/conversations/${state.conversationId}/turns/${turnId}/regenerate`, undefined, question?.content ?? "");
}

function appendPending(content) {
  $("messages").append(
    h(
      "li",
      { class: "chat-message user pending" },
      h("div", { class: "chat-meta" }, h("span", { class: "chat-role", text: "You" }), h("span", { class: "chat-turn", text: "sending" })),
      h("div", { class: "chat-text", text: content }),
    ),
  );
  $("messages").scrollTop = $("messages").scrollHeight;
}

function describeProgress(progress, elapsedMs) {
  const seconds = `${(elapsedMs / 1000).toFixed(1)} s`;
  if (!progress) return { step: "starting", text: `Starting the turn… ${seconds}` };
  const calls = `${progress.modelCalls} model call${progress.modelCalls === 1 ? "" : "s"} so far`;
  if (progress.step === "tool") return { step: "tool", text: `Running tool ${progress.tool ?? ""} · ${calls} · ${seconds}` };
  if (progress.step === "done") return { step: "done", text: `Saving the answer · ${calls} · ${seconds}` };
  if (progress.step === "queued") return { step: "queued", text: `Queued · ${seconds}` };
  return { step: "model", text: `Calling the model · ${calls} · ${seconds}` };
}

export function renderProgress(progress, elapsedMs) {
  const { step, text } = describeProgress(progress, elapsedMs);
  const box = $("progress");
  box.dataset.step = step;
  if (progress?.tool) box.dataset.tool = progress.tool;
  else delete box.dataset.tool;
  box.replaceChildren(h("span", { class: "spinner", "aria-hidden": "true" }), h("span", { class: "progress-text", text }));
}

/** Polls the conversation's running turn until stopped; the POST that runs it answers only at the end. */
function pollProgress(conversationId) {
  const started = Date.now();
  let stopped = false;
  let timer;
  const tick = async () => {
    try {
      const { turns } = await api("GET", `/v1/conversations/${conversationId}/turns?status=running`);
      if (!stopped) renderProgress(turns[0]?.progress, Date.now() - started);
    } catch {
      // A missed poll only delays the next update.
    }
    if (!stopped) timer = setTimeout(tick, POLL_MS);
  };
  renderProgress(undefined, 0);
  timer = setTimeout(tick, POLL_MS / 2);
  return () => {
    stopped = true;
    clearTimeout(timer);
    clearProgress();
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls a queued turn until it finishes; resolves like the synchronous POST would. */
export async function waitForTurn(conversationId, turnId) {
  const started = Date.now();
  try {
    for (;;) {
      const turn = await api("GET", `/v1/conversations/${conversationId}/turns/${turnId}`);
      if (turn.status === "completed") return { turnId, answer: turn.answer };
      if (turn.status === "failed") throw new Error(turn.error?.message ?? "the turn failed");
      if (turn.status === "superseded") throw new Error("a later turn superseded this one");
      renderProgress(turn.progress, Date.now() - started);
      await sleep(POLL_MS);
    }
  } finally {
    // After an approval nothing else clears it: the line must not outlive the turn.
    clearProgress();
  }
}

/**
 * A new message, or, while editing, the edited last question. What was typed leaves the message box
 * only once the turn has an answer: a failed turn gives it back, and a refused request (a 4xx: too
 * long, another turn running), which recorded nothing, gives back the edit as well.
 */
export async function send(content) {
  const editing = state.editing;
  state.editing = null;
  const input = $("composer-input");
  input.value = "";
  const path = editing ? `/v1/conversations/${state.conversationId}/turns/${editing}/edit` : `/v1/conversations/${state.conversationId}/messages`;
  const outcome = await runTurn(path, { content }, content);
  if (outcome === "answered") return;
  input.value = content;
  if (outcome === "refused") state.editing = editing;
  renderChat();
}

/**
 * Runs one turn through `path` and shows its progress; `shown` is the question shown while it runs.
 * Resolves with "answered", "refused" (the request was turned away, nothing was recorded) or "failed".
 */
async function runTurn(path, body, shown) {
  const conversationId = state.conversationId;
  state.running = true;
  $("chat-error").textContent = "";
  renderChat();
  appendPending(shown);
  // A new question streams (Accept: text/event-stream); edits and regenerations answer whole.
  const streamed = path.endsWith("/messages");
  const stop = streamed ? page.clearStreamedTurn : pollProgress(conversationId);
  let result = null;
  let outcome = "answered";
  try {
    result = streamed ? await page.streamTurn(path, body) : await api("POST", path, body);
    // A deployment with a turn queue may answer 202 and run the turn elsewhere.
    if (result?.status === "queued") result = await waitForTurn(conversationId, result.turnId);
  } catch (error) {
    const refused = error instanceof ApiError && error.status >= 400 && error.status < 500;
    outcome = refused ? "refused" : "failed";
    $("chat-error").textContent = refused ? `Not sent: ${error.message}` : `The turn failed: ${error.message}`;
  } finally {
    stop();
    state.running = false;
  }
  state.threads.delete(conversationId);
  if (state.conversationId !== conversationId) return outcome;
  await page.loadMessages();
  await page.loadConversations();
  renderChat();
  if (result && !$("inspector").hidden) await page.openInspector(result.turnId, result.turnId);
  $("composer-input").focus();
  return outcome;
}
