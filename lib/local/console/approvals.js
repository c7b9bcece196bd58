/**
 * The console's approvals (docs/approvals.md): the open conversation's tool calls waiting for a
 * person, with their arguments, to approve, run with edited arguments, or reject; and, in the
 * inspector, what a turn's calls asked, who decided, when, and what ran. It holds no state of
 * its own: app.js passes its API client and element builder in.
 */

/** What each decision is called on the page. */
const DECIDED = { approve: "approved", edit: "edited", reject: "rejected", expire: "expired" };

/**
 * Shows the conversation's pending approvals in `#approvals` (hidden when there are none).
 * `onDecided(turnId, resumed)` runs after each decision taken; `resumed` says the turn goes on.
 */
export async function showApprovals({ api, h, conversationId, onDecided }) {
  const panel = document.getElementById("approvals");
  if (!panel) return;
  const { approvals } = await api("GET", `/v1/conversations/${conversationId}/approvals?status=pending`);
  // The answer may come after the user moved to another conversation.
  panel.replaceChildren();
  panel.hidden = approvals.length === 0;
  if (approvals.length === 0) return;
  panel.append(
    h("h3", { id: "approvals-title", text: `Waiting for a decision (${approvals.length})` }),
    ...approvals.map((approval) => pendingApproval(approval, { api, h, conversationId, onDecided })),
  );
}

function pendingApproval(approval, { api, h, conversationId, onDecided }) {
  const id = approval.approvalId;
  const error = h("p", { class: "error", role: "alert" });
  const args = h("textarea", { id: `approval-args-${id}`, rows: 4, spellcheck: "false" });
  args.value = JSON.stringify(approval.args, null, 2);
  const reason = h("input", { id: `approval-reason-${id}`, maxlength: 1000, autocomplete: "off" });
  const buttons = [];
  const decide = async (body) => {
    error.textContent = "";
    for (const b of buttons) b.disabled = true;
    try {
      const result = await api("POST", `/v1/conversations/${conversationId}/approvals/${id}`, body);
      await onDecided(approval.turnId, result.resumed);
    } catch (failure) {
      error.textContent = failure.message;
      for (const b of buttons) b.disabled = false;
    }
  };
  const edited = () => {
    let parsed;
    try {
      parsed = JSON.parse(args.value);
    } catch {
      parsed = undefined;
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
      error.textContent = "The arguments must be a JSON object.";
      return;
    }
    return decide({ decision: "edit", args: parsed });
  };
  const rejected = () => {
    const text = reason.value.trim();
    return decide(text ? { decision: "reject", reason: text } : { decision: "reject" });
  };
  buttons.push(
    h("button", { type: "button", class: "button-primary", text: "Approve", onclick: () => decide({ decision: "approve" }) }),
    h("button", { type: "button", text: "Run with these arguments", onclick: edited }),
    h("button", { type: "button", class: "button-quiet", text: "Reject", onclick: rejected }),
  );
  return h(
    "article",
    { class: "approval", "aria-label": `Approval of ${approval.tool}`, "data-approval": id },
    h(
      "p",
      { class: "approval-meta" },
      h("strong", { text: approval.tool }),
      ` asked by ${approval.requester.subject} · expires ${new Date(approval.expiresAt).toLocaleString()}`,
    ),
    h("label", { for: `approval-args-${id}`, text: "Arguments" }),
    args,
    approvalContext(h, approval.context),
    h("label", { for: `approval-reason-${id}`, text: "Reason, if you reject (the model reads it)" }),
    reason,
    h("div", { class: "approval-actions" }, buttons),
    error,
  );
}

/**
 * What the turn did before the call (the API's `context`): each earlier call's tool, arguments and
 * output, as text nodes (never markup), untrusted ones marked. Nothing when the turn ran no call before.
 */
function approvalContext(h, context) {
  if (!context?.calls?.length) return null;
  const heading = context.readUntrusted
    ? "Before this call, the turn read output from documents, data or other systems, which may carry instructions: check that the call is what was asked."
    : "Before this call, the turn ran:";
  return h(
    "div",
    { class: `approval-context${context.readUntrusted ? " approval-context-untrusted" : ""}`, "aria-label": "What led to this call" },
    h("p", { text: heading }),
    context.omittedCalls > 0 ? h("p", { text: `(${context.omittedCalls} earlier calls not shown)` }) : null,
    h(
      "ol",
      {},
      context.calls.map((c) =>
        h("li", {}, h("code", { text: `${c.untrusted ? "[untrusted] " : ""}${c.tool} ${c.args}` }), h("div", { text: `→ ${c.output}` })),
      ),
    ),
  );
}

/** The inspector's lines on a turn's approvals: what was asked, who decided and when, what ran; none when nothing waited. */
export function approvalFacts(h, approvals) {
  if (!approvals?.length) return [];
  return [
    h(
      "section",
      { class: "approval-facts", "aria-label": "Approvals of this turn" },
      h("h3", { text: "Approvals" }),
      h(
        "ul",
        {},
        approvals.map((approval) => h("li", { "data-approval": approval.approvalId }, approvalFact(approval))),
      ),
    ),
  ];
}

function approvalFact(approval) {
  const asked = `${approval.tool} ${JSON.stringify(approval.args)}`;
  const d = approval.decision;
  if (!d) return `${asked}: ${approval.status}`;
  const who = d.by ? ` by ${d.by.subject}` : "";
  const when = ` at ${new Date(d.at).toLocaleString()}`;
  const ran =
    d.decision === "approve"
      ? "; ran as asked"
      : d.decision === "edit"
        ? `; ran with ${JSON.stringify(d.args)}`
        : `; not run${d.reason ? ` (${d.reason})` : ""}`;
  return `${asked}: ${DECIDED[d.decision] ?? d.decision}${who}${when}${ran}`;
}
