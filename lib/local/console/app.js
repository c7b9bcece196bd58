// Threadwise console: a plain ES module with no dependencies. It talks to this origin's API only
// (the Content-Security-Policy allows nothing else) and builds every node with textContent, so
// message contents are never parsed as HTML.

/** How often a running turn's progress is asked for, in milliseconds. */
const POLL_MS = 300;
/** Characters of a message shown before "Show all". */
const PREVIEW_CHARS = 480;
const TOKEN_KEY = "threadwise.token";
const PRINCIPAL = /^[\w.@-]{1,64}$/;

const numberFormat = new Intl.NumberFormat("en");
const n = (value) => numberFormat.format(Math.round(value ?? 0));

const state = {
  token: null,
  userId: null,
  tenantId: null,
  conversations: [],
  conversationId: null,
  /** The application record of the open conversation: user and assistant messages with their turn ids. */
  messages: [],
  running: false,
  /** The last question being edited in the composer: its turn id, or null for a new message. */
  editing: null,
  /** Checkpointed messages per conversation; dropped when a turn changes them. */
  threads: new Map(),
  inspector: null,
  /** What the empty state lists, from `GET /local/tools`: the caller's tools and example questions; null until loaded. */
  help: null,
  /** The turn whose "Inspect turn" button gets focus back when the inspector closes. */
  inspectorOpener: null,
};

const $ = (id) => document.getElementById(id);

/** Builds an element; `text` becomes textContent, `on*` become listeners, other keys attributes. */
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { authorization: `Bearer ${state.token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new ApiError(response.status, data?.error?.message ?? `request failed (${response.status})`);
    if (response.status === 401) signOut("Your token was refused or has expired. Sign in again.");
    throw error;
  }
  return data;
}

// ---------------------------------------------------------------------------------------------
// Sign-in

function claimsOf(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload.padEnd(payload.length + ((4 - (payload.length % 4)) % 4), "=")));
  } catch {
    return null;
  }
}

async function useToken(token) {
  const claims = claimsOf(token);
  if (!claims || typeof claims.sub !== "string") throw new Error("That is not a token from npm run token.");
  state.token = token;
  state.userId = claims.sub;
  state.tenantId = typeof claims.tenant === "string" ? claims.tenant : null;
  sessionStorage.setItem(TOKEN_KEY, token);
  // The first API call checks the token; a refused one signs out with a message.
  await loadConversations();
  state.help = await loadHelp();
  showWorkspace();
}

function showWorkspace() {
  $("sign-in").hidden = true;
  $("workspace").hidden = false;
  $("session").hidden = false;
  $("session-user").textContent = state.userId;
  $("session-tenant").textContent = state.tenantId ? ` (tenant ${state.tenantId})` : "";
  renderChat();
  $("new-conversation").focus();
}

function signOut(message = "") {
  sessionStorage.removeItem(TOKEN_KEY);
  Object.assign(state, { token: null, userId: null, tenantId: null, conversations: [], conversationId: null, messages: [], inspector: null, help: null });
  state.threads.clear();
  $("workspace").hidden = true;
  $("session").hidden = true;
  $("sign-in").hidden = false;
  closeInspector(false);
  $("inspector-body").replaceChildren();
  $("conversation-list").replaceChildren();
  $("messages").replaceChildren();
  $("token-input").value = "";
  $("sign-in-error").textContent = message;
  $("sign-in-user").focus();
}

async function signInAs(user, tenant) {
  const response = await fetch("/local/token", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(tenant ? { user, tenant } : { user }),
  });
  const data = await response.json().catch(() => null);
  if (response.status === 404) throw new Error("This server has no local sign-in: paste a token instead.");
  if (!response.ok) throw new Error(data?.error?.message ?? `sign-in failed (${response.status})`);
  await useToken(data.token);
}

// ---------------------------------------------------------------------------------------------
// Conversations

async function loadConversations() {
  const page = await api("GET", "/v1/conversations?limit=100");
  state.conversations = page.conversations;
  renderConversations();
}

function conversationLabel(c) {
  return c.title || "New conversation";
}

function renderConversations() {
  const list = $("conversation-list");
  list.replaceChildren(
    ...state.conversations.map((c) => {
      const current = c.conversationId === state.conversationId;
      const when = new Date(c.updatedAt).toLocaleString("en", { dateStyle: "medium", timeStyle: "short" });
      return h(
        "li",
        { class: current ? "conversation current" : "conversation" },
        h(
          "button",
          {
            type: "button",
            class: "conversation-open",
            "aria-current": current ? "true" : null,
            onclick: guard(() => selectConversation(c.conversationId), "chat-error"),
          },
          h("span", { class: "conversation-title", title: conversationLabel(c), text: conversationLabel(c) }),
          h("span", { class: "conversation-date", text: when }),
        ),
        h("button", {
          type: "button",
          class: "conversation-delete button-quiet",
          "aria-label": `Delete conversation: ${conversationLabel(c)}`,
          text: "Delete",
          onclick: guard(() => deleteConversation(c), "chat-error"),
        }),
      );
    }),
  );
  $("conversation-empty").hidden = state.conversations.length > 0;
}

async function createConversation() {
  const created = await api("POST", "/v1/conversations");
  await loadConversations();
  await selectConversation(created.conversationId);
  $("composer-input").focus();
}

async function deleteConversation(c) {
  if (!window.confirm(`Delete "${conversationLabel(c)}" everywhere (messages, turns, checkpoints, artifacts)?`)) return;
  await api("DELETE", `/v1/conversations/${c.conversationId}`);
  state.threads.delete(c.conversationId);
  if (state.conversationId === c.conversationId) {
    state.conversationId = null;
    state.messages = [];
    closeInspector(false);
  }
  await loadConversations();
  renderChat();
  $("new-conversation").focus();
}

async function selectConversation(conversationId) {
  if (state.running) return;
  state.conversationId = conversationId;
  closeInspector(false);
  renderConversations();
  await loadMessages();
}

async function loadMessages() {
  const record = await api("GET", `/v1/conversations/${state.conversationId}/messages`);
  state.messages = record.messages;
  renderChat();
}

// ---------------------------------------------------------------------------------------------
// Chat

/** Turn ids in the order their first message was recorded. */
function turnOrder() {
  const ids = [];
  for (const m of state.messages) if (!ids.includes(m.turnId)) ids.push(m.turnId);
  return ids;
}

/** The turn an edit or a regeneration would replace: the one of the last message not already replaced. */
function lastTurnId() {
  for (let i = state.messages.length - 1; i >= 0; i--) if (!state.messages[i].replacedBy) return state.messages[i].turnId;
  return null;
}

function renderChat() {
  const current = state.conversations.find((c) => c.conversationId === state.conversationId);
  $("chat-title").textContent = current ? conversationLabel(current) : state.conversationId ? "Conversation" : "Pick or start a conversation";
  $("chat-title").title = $("chat-title").textContent;
  renderEmptyState();
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
          replaced ? h("span", { class: "chat-replaced", text: isAnswer ? "replaced by a newer answer" : "replaced by an edit" }) : null,
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
                onclick: () => openInspector(m.turnId, m.turnId),
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

function stopEditing() {
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

function renderProgress(progress, elapsedMs) {
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
    const box = $("progress");
    box.replaceChildren();
    delete box.dataset.step;
    delete box.dataset.tool;
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls a queued turn until it finishes; resolves like the synchronous POST would. */
async function waitForTurn(conversationId, turnId) {
  const started = Date.now();
  for (;;) {
    const turn = await api("GET", `/v1/conversations/${conversationId}/turns/${turnId}`);
    if (turn.status === "completed") return { turnId, answer: turn.answer };
    if (turn.status === "failed") throw new Error(turn.error?.message ?? "the turn failed");
    if (turn.status === "superseded") throw new Error("a later turn superseded this one");
    renderProgress(turn.progress, Date.now() - started);
    await sleep(POLL_MS);
  }
}

/**
 * A new message, or, while editing, the edited last question. What was typed leaves the message box
 * only once the turn has an answer: a failed turn gives it back, and a refused request (a 4xx: too
 * long, another turn running), which recorded nothing, gives back the edit as well.
 */
async function send(content) {
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
  const stop = streamed ? clearStreamedTurn : pollProgress(conversationId);
  let result = null;
  let outcome = "answered";
  try {
    result = streamed ? await streamTurn(path, body) : await api("POST", path, body);
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
  await loadMessages();
  await loadConversations();
  renderChat();
  if (result && !$("inspector").hidden) await openInspector(result.turnId, result.turnId);
  $("composer-input").focus();
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// Empty state: the signed-in user's tools and questions that work, as the server lists them

/** `GET /local/tools`, or null where the server does not list its tools. */
async function loadHelp() {
  try {
    return await api("GET", "/local/tools");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) throw error;
    return null;
  }
}

function firstSentence(text) {
  const end = text.search(/\.(\s|$)/);
  return end < 0 ? text : text.slice(0, end + 1);
}

/** Shown while the open conversation has no message: example questions to put in the message box, then the tools. */
function renderEmptyState() {
  const box = $("empty-state");
  box.hidden = !state.help || state.messages.length > 0 || state.running;
  if (box.hidden) {
    box.replaceChildren();
    return;
  }
  const { model, tools, conversation } = state.help;
  const examples = [...conversation, ...tools.flatMap((t) => t.examples)];
  const how =
    model === "local"
      ? "The offline model calls a tool when your message names it followed by a JSON object of its arguments; otherwise it answers from the conversation."
      : "The model chooses among these tools.";
  box.replaceChildren(
    h("h3", { id: "empty-state-title", text: "What you can ask" }),
    h("p", { class: "hint", text: `${how} Pick a question to put it in the message box.` }),
    h(
      "ul",
      { class: "example-list", "aria-label": "Example questions" },
      examples.map((question) =>
        h("li", {}, h("button", { type: "button", class: "example", text: question, onclick: guard(() => useExample(question), "chat-error") })),
      ),
    ),
    h("h3", { text: `Tools you can use (${tools.length})` }),
    h(
      "ul",
      { class: "tool-list", "aria-label": "Tools" },
      tools.map((t) =>
        h(
          "li",
          { "data-tool": t.name },
          h("code", { text: `${t.name} ${t.arguments}` }),
          h("span", { class: "tool-description", text: firstSentence(t.description) }),
        ),
      ),
    ),
  );
}

async function useExample(question) {
  if (!state.conversationId) await createConversation();
  const input = $("composer-input");
  input.value = question;
  input.focus();
}

// ---------------------------------------------------------------------------------------------
// Streaming: a new question's answer appears as the model writes it, under the progress line
// (docs/streaming.md). Kept apart from the chat above so the two change independently.

/** The draft answer while it streams: the current model call's text (an earlier call's text was a preamble to its tools). */
function renderDraft(text) {
  let draft = document.getElementById("streamed-draft");
  if (!draft) {
    draft = h(
      "li",
      { id: "streamed-draft", class: "chat-message streamed-draft", "aria-live": "off" },
      h("div", { class: "chat-meta" }, h("span", { class: "chat-role", text: "Assistant" }), h("span", { class: "chat-turn", text: "writing" })),
      h("div", { class: "chat-text" }),
    );
    $("messages").append(draft);
  }
  draft.querySelector(".chat-text").textContent = text;
  $("messages").scrollTop = $("messages").scrollHeight;
}

function clearStreamedTurn() {
  document.getElementById("streamed-draft")?.remove();
  const box = $("progress");
  box.replaceChildren();
  delete box.dataset.step;
  delete box.dataset.tool;
}

/** Reads a server-sent event stream block by block; yields `{ event, data }`. */
async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += value;
    let end;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const fields = Object.fromEntries(block.split("\n").map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]));
      if (fields.event && fields.data) yield { event: fields.event, data: JSON.parse(fields.data) };
    }
  }
}

/** Runs a turn as a stream: progress and draft text as events arrive; resolves like the JSON POST, or throws its failure. */
async function streamTurn(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${state.token}`, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    if (response.status === 401) signOut("Your token was refused or has expired. Sign in again.");
    throw new ApiError(response.status, data?.error?.message ?? `request failed (${response.status})`);
  }
  const started = Date.now();
  let turnId = null;
  let modelCalls = 0;
  let draft = "";
  renderProgress(undefined, 0);
  for await (const { event, data } of serverSentEvents(response)) {
    if (event === "turn") turnId = data.turnId;
    else if (event === "progress") {
      modelCalls = data.modelCall;
      draft = "";
      renderProgress({ step: "model", modelCalls }, Date.now() - started);
    } else if (event === "tool_started") renderProgress({ step: "tool", tool: data.tool, modelCalls: modelCalls + 1 }, Date.now() - started);
    else if (event === "text") renderDraft((draft += data.delta));
    else if (event === "done") return { turnId, answer: data.answer };
    // Paused for approvals: resolves as the JSON POST's 202 does (the stream ends here).
    else if (event === "approval_requested") return { turnId, status: "awaiting_approval", approvals: data.approvals };
    else if (event === "failed") throw new Error(`${data.message} (${data.code})`);
  }
  // The stream ended without an outcome (the connection dropped): the turn goes on; wait for it.
  return waitForTurn(state.conversationId, turnId);
}

// ---------------------------------------------------------------------------------------------
// Inspector: the view each model call was sent, beside the durable state it was built from

async function threadOf(conversationId) {
  if (!state.threads.has(conversationId)) {
    const { messages } = await api("GET", `/v1/conversations/${conversationId}/state`);
    state.threads.set(conversationId, messages);
  }
  return state.threads.get(conversationId);
}

async function openInspector(turnId, opener) {
  if (opener) state.inspectorOpener = opener;
  const aside = $("inspector");
  aside.hidden = false;
  $("workspace").classList.add("with-inspector");
  $("inspector-body").replaceChildren(h("p", { class: "hint", text: "Loading the turn…" }));
  try {
    const [turn, thread] = await Promise.all([api("GET", `/v1/conversations/${state.conversationId}/turns/${turnId}`), threadOf(state.conversationId)]);
    state.inspector = { turn, thread, callIndex: Math.max(0, turn.calls.length - 1) };
    renderInspector();
    renderChat();
  } catch (error) {
    $("inspector-body").replaceChildren(h("p", { class: "error", role: "alert", text: `Could not load the turn: ${error.message}` }));
  }
  $("inspector-title").focus();
}

function closeInspector(restoreFocus = true) {
  const wasOpen = state.inspector !== null;
  state.inspector = null;
  if (wasOpen) renderChat();
  $("inspector").hidden = true;
  $("workspace").classList.remove("with-inspector");
  const opener = state.inspectorOpener && document.querySelector(`.chat-message[data-turn-id="${state.inspectorOpener}"] .inspect-button`);
  if (restoreFocus && opener) opener.focus();
}

/** Splits state messages into turns: each starts at a user message. */
function groupTurns(messages) {
  const groups = [];
  let leading = null;
  messages.forEach((message, index) => {
    if (message.role === "user") groups.push({ start: index, items: [] });
    const target = groups[groups.length - 1] ?? (leading ??= { start: 0, items: [], leading: true });
    target.items.push({ message, index });
  });
  return { leading, groups };
}

/** The final answer of a finished turn, as the view takes it: its last assistant message, when that calls no tool. */
function finalAnswerIndex(group) {
  for (let i = group.items.length - 1; i > 0; i--) {
    const { message, index } = group.items[i];
    if (message.role !== "assistant") continue;
    return message.toolCalls?.length ? -1 : index;
  }
  return -1;
}

const FATES = {
  sent: { label: "sent as stored", kind: "sent" },
  question: { label: "sent as the question of a Q/A pair", kind: "condensed" },
  answer: { label: "sent as the answer of a Q/A pair", kind: "condensed" },
  exchange: { label: "left out: tool exchange of a finished turn", kind: "omitted" },
  older: { label: "left out: older than the finished turns kept", kind: "omitted" },
  budget: { label: "left out: dropped to fit the budget", kind: "omitted" },
  system: { label: "left out: the view has its own system prompt", kind: "omitted" },
  notice: { label: "replaced by a notice", kind: "notice" },
};

/**
 * What became of each stored message in one call's view. The view is: system prompt, the last
 * `finishedTurnsKept` finished turns as (question, answer), then the active turn whole, with
 * the outputs in `omittedOutputs` replaced by notices.
 */
function classify(thread, stats) {
  const stored = thread.slice(0, stats.stateMessages);
  const { leading, groups } = groupTurns(stored);
  const finished = groups.slice(0, -1);
  const keptFrom = finished.length - stats.finishedTurnsKept;
  const droppedFrom = keptFrom - (stats.finishedTurnsDroppedForBudget ?? 0);
  const omitted = new Map(stats.omittedOutputs.map((o) => [o.toolCallId, o]));
  const turns = groups.map((group, t) => {
    const active = t === groups.length - 1;
    let summary;
    if (active) summary = "active turn: sent whole";
    else if (t >= keptFrom) summary = "finished: condensed to a Q/A pair";
    else if (t >= droppedFrom) summary = "finished: dropped to fit the budget";
    else summary = "finished: older than the turns kept";
    const answerAt = active ? -1 : finalAnswerIndex(group);
    const items = group.items.map(({ message, index }) => {
      let fate;
      if (active) fate = message.role === "tool" && omitted.has(message.toolCallId) ? "notice" : "sent";
      else if (t < droppedFrom) fate = "older";
      else if (t < keptFrom) fate = "budget";
      else if (index === group.start) fate = "question";
      else if (index === answerAt) fate = "answer";
      else fate = "exchange";
      return { message, index, fate, omitted: fate === "notice" ? omitted.get(message.toolCallId) : undefined };
    });
    return { number: t + 1, turnId: turnIdOf(group), active, summary, items };
  });
  const leadingItems = leading ? leading.items.map(({ message, index }) => ({ message, index, fate: "system" })) : [];
  return { stored, turns, leadingItems, keptFrom, finishedCount: finished.length };
}

function turnIdOf(group) {
  const id = group.items[0]?.message.id ?? "";
  return id.endsWith(":user") ? id.slice(0, -":user".length) : null;
}

function renderInspector() {
  const { turn, thread, callIndex } = state.inspector;
  const order = turnOrder();
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
  $("inspector-body").replaceChildren(meta, tabs, panel);
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
  if (thread.length < stats.stateMessages) {
    return h("p", { class: "error", text: "The stored thread is shorter than when this call was made: it was changed or deleted since." });
  }
  const plan = classify(thread, stats);
  return h(
    "div",
    { class: "call" },
    renderFacts(call, plan),
    renderBudget(call),
    renderLegend(),
    h("div", { class: "columns" }, renderStateColumn(plan, stats, turn), renderViewColumn(call, plan)),
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
  const ratio = stats.tokenEstimate?.ratio.toFixed(3);
  const margin = Math.round((stats.tokenEstimate?.margin ?? 0) * 100);
  const estimate =
    stats.estimatedInputTokens !== undefined ? ` Estimated ${n(stats.estimatedInputTokens)} input tokens (ratio ${ratio}, margin ${margin}%)` : "";
  const error = call.estimateError !== null && call.estimateError !== undefined ? `, ${(call.estimateError * 100).toFixed(1)}% off the reported count.` : ".";
  return h(
    "li",
    { class: "fact", "data-fact": "cache" },
    `${where}. `,
    h("strong", { text: `${cachedShare(usage ?? { inputTokens: 0 })} of input read from cache` }),
    ` (${n(read)} read, ${n(written)} written, ${n((usage?.inputTokens ?? 0) - read - written)} uncached)`,
    usage?.costUsd !== undefined ? ` · ${dollars(usage.costUsd)}` : "",
    ".",
    estimate ? `${estimate}${error}` : "",
  );
}

function reasonText(o) {
  return o.reason === "over-budget" ? "replaced to keep the view within its budget" : "over the limit for one tool output";
}

function renderFacts(call, plan) {
  const { stats } = call;
  const leftOut = plan.turns.flatMap((t) => t.items).filter((i) => FATES[i.fate].kind === "omitted").length + plan.leadingItems.length;
  const exchange = plan.turns.flatMap((t) => t.items).filter((i) => i.fate === "exchange").length;
  const ratio = stats.stateTokens > 0 ? Math.round((stats.viewTokens / stats.stateTokens) * 100) : 100;
  const facts = [
    h(
      "li",
      { class: "fact fact-headline" },
      h("strong", { text: `${n(stats.stateMessages)} stored messages, ${n(stats.stateTokens)} tokens` }),
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
    h(
      "li",
      { class: "fact", "data-fact": "left-out" },
      `Left out of the view: ${leftOut} stored message${leftOut === 1 ? "" : "s"}`,
      exchange ? ` (${exchange} from tool exchanges of finished turns)` : "",
      ".",
    ),
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
      h("span", { class: "column-sub", text: `checkpointed thread · ${n(stats.stateMessages)} messages · ${n(stats.stateTokens)} tokens` }),
    ),
    h("ol", { class: "msg-list" }, entries.flat()),
  );
}

function stateItem(item) {
  const { message, fate } = item;
  const info = FATES[fate];
  const badges = [h("span", { class: `badge badge-${info.kind}`, text: fate === "notice" ? `${info.label} (${item.omitted.reason})` : info.label })];
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
    { class: `msg msg-${info.kind}`, "data-fate": fate, "data-role": message.role },
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

function renderViewColumn(call, plan) {
  const { stats, view } = call;
  const omitted = new Map(stats.omittedOutputs.map((o) => [o.toolCallId, o]));
  const hasSystem = view[0]?.role === "system";
  const pairStart = hasSystem ? 1 : 0;
  const pairEnd = pairStart + stats.finishedTurnsKept * 2;
  const cachePoints = new Map((stats.cachePoints ?? []).map((p) => [p.after, p]));
  const items = view.map((message, i) => {
    let kind = "sent";
    let label = "active turn";
    if (hasSystem && i === 0) label = "system prompt (from the policy)";
    else if (i < pairEnd) {
      const pair = Math.floor((i - pairStart) / 2);
      const turnNumber = plan.keptFrom + pair + 1;
      kind = "condensed";
      label = `${(i - pairStart) % 2 === 0 ? "question" : "answer"} of turn ${turnNumber} (Q/A pair)`;
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
      h("span", { class: "column-sub", text: `sent for call ${call.index + 1} · ${n(stats.viewMessages)} messages · ${n(stats.viewTokens)} tokens` }),
    ),
    h("ol", { class: "msg-list" }, items),
  );
}

// ---------------------------------------------------------------------------------------------
// Wiring

function guard(action, errorBox) {
  return async (...args) => {
    try {
      $(errorBox).textContent = "";
      await action(...args);
    } catch (error) {
      // A refused token has already signed out, with its own message.
      if (error instanceof ApiError && error.status === 401) return;
      $(errorBox).textContent = error.message;
    }
  };
}

function start() {
  $("sign-in-form").addEventListener(
    "submit",
    guard(async (event) => {
      event.preventDefault();
      const user = $("sign-in-user").value.trim();
      const tenant = $("sign-in-tenant").value.trim();
      if (!PRINCIPAL.test(user)) throw new Error("Enter a user name: 1 to 64 letters, digits or . _ @ -");
      if (tenant && !PRINCIPAL.test(tenant)) throw new Error("A tenant is 1 to 64 letters, digits or . _ @ -");
      await signInAs(user, tenant);
    }, "sign-in-error"),
  );
  $("token-form").addEventListener(
    "submit",
    guard(async (event) => {
      event.preventDefault();
      await useToken($("token-input").value.trim());
    }, "sign-in-error"),
  );
  $("sign-out").addEventListener("click", () => signOut());
  $("new-conversation").addEventListener("click", guard(createConversation, "chat-error"));
  $("composer").addEventListener(
    "submit",
    guard(async (event) => {
      event.preventDefault();
      const input = $("composer-input");
      const content = input.value.trim();
      if (!content || state.running || !state.conversationId) return;
      await send(content);
    }, "chat-error"),
  );
  $("composer-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("cancel-edit").addEventListener("click", () => stopEditing());
  $("inspector-close").addEventListener("click", () => closeInspector());
  $("inspector").addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeInspector();
  });
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) guard(() => useToken(saved), "sign-in-error")();
  else $("sign-in-user").focus();
}

start();
