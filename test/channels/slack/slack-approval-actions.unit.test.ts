import { describe, expect, it } from "vitest";
import { editButtonValue } from "../../../lib/channels/slack/slack-approval-actions.js";

const CONVERSATION = "0b8f3c1e-1a1b-4c1d-8e1f-000000000001";
const APPROVAL = "0b8f3c1e-1a1b-4c1d-8e1f-000000000002";

describe("editButtonValue", () => {
  it("returns the ids, then the arguments as the modal shows them", () => {
    expect(editButtonValue(`${CONVERSATION}:${APPROVAL}`, { title: "Call" })).toBe(`${CONVERSATION}:${APPROVAL}\n{\n  "title": "Call"\n}`);
  });

  it("returns the ids alone for arguments longer than a button's value takes", () => {
    expect(editButtonValue(`${CONVERSATION}:${APPROVAL}`, { title: "x".repeat(2_000) })).toBe(`${CONVERSATION}:${APPROVAL}`);
  });
});
