import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StructuredLogger } from "../../lib/logger.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

const POLICY = { create_follow_up: { require: "always" } };

/** Resolves with the fields of the server's next "approval sweep" line (a sweep that expired something). */
let nextSweep: (fields: Record<string, unknown>) => void = () => undefined;
const logger: StructuredLogger = {
  info: (message, fields) => {
    if (message === "approval sweep") nextSweep(fields);
  },
  warn: () => undefined,
  error: () => undefined,
};
const swept = () => new Promise<Record<string, unknown>>((resolve) => (nextSweep = resolve));

let t: TestServer;
let alice: string;

beforeAll(async () => {
  t = await startTestServer({ TOOL_APPROVALS: JSON.stringify(POLICY), APPROVAL_SWEEP_SECONDS: "1" }, { app: { logger } });
  alice = await t.token("alice");
});

afterAll(async () => {
  await t?.close();
});

describe("local server: the approvals sweep", () => {
  it("expires an approval nobody looks at once past its deadline, and the turn ends telling the model", async () => {
    const id = (await t.call("POST", "/v1/conversations", { token: alice })).body.conversationId as string;
    const asked = await t.call("POST", `/v1/conversations/${id}/messages`, {
      token: alice,
      json: { content: 'create_follow_up {"title": "Call the supplier"}' },
    });
    expect(asked.status).toBe(202);
    const approvalId = asked.body.approvals[0].approvalId as string;
    const sweep = swept();
    // Due now: nothing but the server's own timer looks at it (no listing, no decision).
    await t.db.collection("approvals").updateOne({ _id: approvalId as never }, { $set: { deadline: new Date(Date.now() - 1000) } });

    expect(await sweep).toEqual({ expired: 1, resumed: 1, more: false });
    await t.server.turnQueue.drain();

    expect((await t.db.collection("approvals").findOne({ _id: approvalId as never }))?.status).toBe("expired");
    const turn = await t.call("GET", `/v1/conversations/${id}/turns/${asked.body.turnId}`, { token: alice });
    expect(turn.body.status).toBe("completed");
    expect(turn.body.answer).toContain("expired");
    expect(await t.db.collection("follow_ups").countDocuments({ conversationId: id })).toBe(0);
  });
});
