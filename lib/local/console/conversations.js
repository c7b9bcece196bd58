// Threadwise console — conversations.

import { showApprovals } from "./approvals.js";
import { $, api, breakableText, guard, h, state, page } from "./shared.js";

export async function loadConversations() {
  const page = await api("GET", "/v1/conversations?limit=100");
  state.conversations = page.conversations;
  renderConversations();
}

export function conversationLabel(c) {
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
          h("span", { class: "conversation-title", title: conversationLabel(c) }, breakableText(conversationLabel(c))),
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

export async function createConversation() {
  // The open conversation is still empty (an example was picked, nothing sent): it is the new one.
  if (state.conversationId && state.messages.length === 0 && !state.running) {
    $("composer-input").value = "";
    $("composer-input").focus();
    return;
  }
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
    page.closeInspector(false);
  }
  await loadConversations();
  page.renderChat();
  $("new-conversation").focus();
}

async function selectConversation(conversationId) {
  if (state.running) return;
  state.conversationId = conversationId;
  page.closeInspector(false);
  renderConversations();
  await loadMessages();
}

export async function loadMessages() {
  // Calls waiting for a decision (approvals.js) load with the messages; a decision that resumes the turn waits for its answer.
  const onDecided = async (turnId, resumed) => {
    if (resumed) await page.waitForTurn(state.conversationId, turnId);
    await loadMessages();
  };
  const conversationId = state.conversationId;
  const [record] = await Promise.all([api("GET", `/v1/conversations/${conversationId}/messages`), showApprovals({ api, h, conversationId, onDecided })]);
  state.messages = record.messages;
  page.renderChat();
}
