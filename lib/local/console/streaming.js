// Threadwise console — streaming: a new question's answer appears as the model writes it, under the progress line.

import { $, ApiError, apiErrorText, h, state, page } from "./shared.js";

// (docs/streaming.md). Kept apart from the chat above so the two change independently.

/** How often the progress line's clock moves while nothing else happens. */
const CLOCK_MS = 200;

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

export function clearStreamedTurn() {
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
export async function streamTurn(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${state.token}`, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    if (response.status === 401) page.signOut("Your token was refused or has expired. Sign in again.");
    throw new ApiError(response.status, apiErrorText(data, response.status));
  }
  const started = Date.now();
  let turnId = null;
  let modelCalls = 0;
  let draft = "";
  // The clock ticks between events too: a tool may run for seconds without one.
  let progress;
  const show = (next) => {
    progress = next;
    page.renderProgress(progress, Date.now() - started);
  };
  const clock = setInterval(() => page.renderProgress(progress, Date.now() - started), CLOCK_MS);
  try {
    show(undefined);
    for await (const { event, data } of serverSentEvents(response)) {
      if (event === "turn") turnId = data.turnId;
      else if (event === "progress") {
        modelCalls = data.modelCall;
        draft = "";
        show({ step: "model", modelCalls });
      } else if (event === "tool_started") show({ step: "tool", tool: data.tool, modelCalls: modelCalls + 1 });
      else if (event === "text") renderDraft((draft += data.delta));
      else if (event === "done") return { turnId, answer: data.answer };
      // Paused for approvals: resolves as the JSON POST's 202 does (the stream ends here).
      else if (event === "approval_requested") return { turnId, status: "awaiting_approval", approvals: data.approvals };
      else if (event === "failed") throw new Error(`${data.message} (${data.code})`);
    }
  } finally {
    clearInterval(clock);
  }
  // The stream ended without an outcome (the connection dropped): the turn goes on; wait for it.
  return page.waitForTurn(state.conversationId, turnId);
}
