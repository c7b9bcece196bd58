import { describe, expect, it } from "vitest";
import { editableArguments, editModal, editTargetOf, SLACK_INPUT_MAX_CHARS } from "../../../lib/channels/slack/slack-approval-modal.js";

const CONVERSATION = "0b8f3c1e-1a1b-4c1d-8e1f-000000000001";
const APPROVAL = "0b8f3c1e-1a1b-4c1d-8e1f-000000000002";

describe("editableArguments", () => {
  it("returns the arguments as indented JSON", () => {
    expect(editableArguments({ args: { title: "Call" } })).toBe('{\n  "title": "Call"\n}');
  });

  it("returns undefined for arguments longer than Slack's input", () => {
    expect(editableArguments({ args: { title: "x".repeat(SLACK_INPUT_MAX_CHARS) } })).toBeUndefined();
  });
});

describe("editModal", () => {
  it("returns a modal whose input is prefilled and whose metadata names the approval and the message", () => {
    const view = editModal({ tool: "create_follow_up", deadline: new Date("2026-12-01T18:00:00Z") }, '{"title":"Call"}', {
      conversationId: CONVERSATION,
      approvalId: APPROVAL,
      channel: "C1",
      ts: "1700000000.000100",
    });
    expect(view).toMatchObject({ type: "modal", callback_id: "threadwise_approval_edit", submit: { type: "plain_text" } });
    expect(view.blocks).toContainEqual(
      expect.objectContaining({ type: "input", block_id: "args", element: expect.objectContaining({ action_id: "args", initial_value: '{"title":"Call"}' }) }),
    );
    expect(editTargetOf(view.private_metadata as string)).toEqual({
      conversationId: CONVERSATION,
      approvalId: APPROVAL,
      channel: "C1",
      ts: "1700000000.000100",
    });
  });
});

describe("editTargetOf", () => {
  it("returns the approval without a message when the modal named none", () => {
    expect(editTargetOf(JSON.stringify({ c: CONVERSATION, a: APPROVAL }))).toEqual({ conversationId: CONVERSATION, approvalId: APPROVAL });
  });

  it.each([["not json"], [JSON.stringify({ c: "x", a: APPROVAL })], [JSON.stringify({ a: APPROVAL })]])(
    "returns undefined for metadata that is not ours: %s",
    (text) => {
      expect(editTargetOf(text)).toBeUndefined();
    },
  );
});
