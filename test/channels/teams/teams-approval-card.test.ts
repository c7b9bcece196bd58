import { describe, expect, it } from "vitest";
import { approvalCard, TEAMS_APPROVAL_VERBS } from "../../../lib/channels/teams/teams-approval-card.js";

const approval = { approvalId: "a1", tool: "create_follow_up", args: { title: "Call Helios" }, expiresAt: "2026-12-01T18:00:00.000Z" };

describe("approvalCard", () => {
  it("returns an Adaptive Card 1.4 naming the tool, its arguments and the deadline", () => {
    const card = approvalCard("c1", approval);
    expect(card).toMatchObject({ type: "AdaptiveCard", version: "1.4" });
    expect((card.body as { text: string }[]).map((b) => b.text)).toEqual([
      "create_follow_up waits for approval",
      '{"title":"Call Helios"}',
      "Until 2026-12-01T18:00:00.000Z",
    ]);
  });

  it("returns approve and reject buttons whose data names the conversation and approval", () => {
    const actions = approvalCard("c1", approval).actions as { type: string; verb: string; data: unknown }[];
    expect(actions.map((a) => [a.type, a.verb])).toEqual([
      ["Action.Execute", TEAMS_APPROVAL_VERBS.approve],
      ["Action.Execute", TEAMS_APPROVAL_VERBS.reject],
    ]);
    for (const action of actions) expect(action.data).toEqual({ conversationId: "c1", approvalId: "a1" });
  });

  it("cuts long arguments to 2,500 characters", () => {
    const card = approvalCard("c1", { ...approval, args: { text: "x".repeat(5_000) } });
    expect((card.body as { text: string }[])[1].text).toHaveLength(2_500);
  });
});
