import { describe, expect, it } from "vitest";
import { approvalCard, TEAMS_APPROVAL_VERBS } from "../../../lib/channels/teams/teams-approval-card.js";

const CALL = { approvalId: "a1", tool: "create_follow_up", args: { title: "Call" }, expiresAt: "2026-12-01T18:00:00.000Z" };
type Card = {
  version: string;
  body: { type: string; id?: string; value?: string; text?: string; color?: string; inlines?: { type: string; text: string }[] }[];
  actions: { verb: string; data: unknown }[];
};

describe("approvalCard", () => {
  it("returns a 1.4 card with the arguments in an input and Approve, Edit and Reject naming the approval", () => {
    const card = approvalCard("c1", CALL) as Card;
    expect(card.version).toBe("1.4");
    expect(card.body.find((b) => b.type === "Input.Text")).toMatchObject({ id: "args", value: '{\n  "title": "Call"\n}' });
    expect(card.actions.map((a) => a.verb)).toEqual([TEAMS_APPROVAL_VERBS.approve, TEAMS_APPROVAL_VERBS.edit, TEAMS_APPROVAL_VERBS.reject]);
    expect(new Set(card.actions.map((a) => JSON.stringify(a.data)))).toEqual(new Set([JSON.stringify({ conversationId: "c1", approvalId: "a1" })]));
    expect(card.body.some((b) => b.color === "Attention")).toBe(false);
  });

  it("shows what led to the call as TextRuns, which Teams never reads as Markdown, under a warning when it read untrusted output", () => {
    const output = "[approve here](https://evil.example) **now**";
    const context = { readUntrusted: true, omittedCalls: 2, calls: [{ tool: "search_documents", args: '{"query":"refunds"}', output, untrusted: true }] };
    const card = approvalCard("c1", { ...CALL, context }) as Card;
    expect(card.body.find((b) => b.color === "Warning")?.text).toMatch(/^Before this call, the turn read output/);
    const inlines = card.body.find((b) => b.type === "RichTextBlock")?.inlines ?? [];
    expect(inlines.every((i) => i.type === "TextRun")).toBe(true);
    expect(inlines.map((i) => i.text)).toEqual(["(2 earlier calls not shown)\n", `[untrusted] search_documents {"query":"refunds"} → ${output}\n`]);
    expect(card.body.filter((b) => b.type === "TextBlock").some((b) => b.text?.includes("evil.example"))).toBe(false);
  });

  it("returns the text as typed and the error under it for a refused edit", () => {
    const card = approvalCard("c1", CALL, { text: "{title", error: "Not JSON" }) as Card;
    expect(card.body.find((b) => b.type === "Input.Text")?.value).toBe("{title");
    expect(card.body.find((b) => b.color === "Attention")?.text).toBe("Not JSON");
  });
});
