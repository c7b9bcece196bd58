// Threadwise console — sign-in.

import { $, TOKEN_KEY, state, page } from "./shared.js";

function claimsOf(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload.padEnd(payload.length + ((4 - (payload.length % 4)) % 4), "=")));
  } catch {
    return null;
  }
}

export async function useToken(token) {
  const claims = claimsOf(token);
  if (!claims || typeof claims.sub !== "string") throw new Error("That is not a token from npm run token.");
  state.token = token;
  state.userId = claims.sub;
  state.tenantId = typeof claims.tenant === "string" ? claims.tenant : null;
  sessionStorage.setItem(TOKEN_KEY, token);
  // The first API call checks the token; a refused one signs out with a message.
  await page.loadConversations();
  state.help = await page.loadHelp();
  showWorkspace();
}

function showWorkspace() {
  $("sign-in").hidden = true;
  $("workspace").hidden = false;
  $("session").hidden = false;
  $("session-user").textContent = state.userId;
  $("session-tenant").textContent = state.tenantId ? ` (tenant ${state.tenantId})` : "";
  page.renderChat();
  $("new-conversation").focus();
}

export function signOut(message = "") {
  sessionStorage.removeItem(TOKEN_KEY);
  Object.assign(state, { token: null, userId: null, tenantId: null, conversations: [], conversationId: null, messages: [], inspector: null, help: null });
  state.threads.clear();
  $("workspace").hidden = true;
  $("session").hidden = true;
  $("sign-in").hidden = false;
  page.closeInspector(false);
  $("inspector-body").replaceChildren();
  $("conversation-list").replaceChildren();
  $("messages").replaceChildren();
  $("token-input").value = "";
  $("sign-in-error").textContent = message;
  $("sign-in-user").focus();
}

export async function signInAs(user, tenant) {
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
