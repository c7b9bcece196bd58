// Threadwise console, the entry module: wires the page's controls to the parts in the other modules.

import { renderChat, renderProgress, send, stopEditing, turnOrder, waitForTurn } from "./chat.js";
import { conversationLabel, createConversation, loadConversations, loadMessages } from "./conversations.js";
import { loadHelp, renderEmptyState } from "./empty-state.js";
import { closeInspector, openInspector } from "./inspector.js";
import { $, guard, page, PRINCIPAL, state, TOKEN_KEY } from "./shared.js";
import { signInAs, signOut, useToken } from "./sign-in.js";
import { clearStreamedTurn, streamTurn } from "./streaming.js";

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

Object.assign(page, {
  clearStreamedTurn,
  closeInspector,
  conversationLabel,
  createConversation,
  loadConversations,
  loadHelp,
  loadMessages,
  openInspector,
  renderChat,
  renderEmptyState,
  renderProgress,
  signOut,
  streamTurn,
  turnOrder,
  waitForTurn,
});
start();
