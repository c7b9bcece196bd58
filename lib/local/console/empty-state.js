// Threadwise console — empty state: the signed-in user's tools and questions that work, as the server lists them.

import { $, api, guard, h, state, ApiError, page } from "./shared.js";

/** `GET /local/tools`, or null where the server does not list its tools. */
export async function loadHelp() {
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
export function renderEmptyState() {
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
  if (!state.conversationId) await page.createConversation();
  const input = $("composer-input");
  input.value = question;
  input.focus();
}
