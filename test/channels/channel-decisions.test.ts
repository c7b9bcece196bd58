import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Binary } from "mongodb";
import { beforeAll, describe, expect, it } from "vitest";
import { slackPrincipal, teamsPrincipal, tenantOwner } from "../../lib/auth/principal.js";
import { editedArgumentsOf, invalidEditText, MAX_EDITED_ARGUMENTS_CHARS, webhookChannelDecisions } from "../../lib/channels/channel-decisions.js";
import type { ChannelRolesMap } from "../../lib/config/auth-config.js";
import { ForbiddenError, NotFoundError, RoleLookupError, ValidationError } from "../../lib/errors.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { ApprovalStore, approvalIdOf, argsHash } from "../../lib/store/approval-store.js";
import { ConversationStore } from "../../lib/store/conversation-store.js";
import { TurnStore } from "../../lib/store/turn-store.js";
import { editedArgumentIssues } from "../../lib/approvals/edited-arguments.js";
import { RESUMED_QUESTION } from "../../lib/approvals/resume-job.js";
import { isCiphertext } from "../../lib/crypto/content-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { heldFence } from "../support/fences.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../support/linear-work.js";
import { sampleSlackJob } from "../support/turn-jobs.js";
import { useStoreFixture } from "../support/store-fixture.js";

describe("editedArgumentsOf", () => {
  it("returns the arguments of a JSON object", () => {
    expect(editedArgumentsOf('{"title": "Call", "n": 2}')).toEqual({ args: { title: "Call", n: 2 } });
  });

  it.each([[undefined], [""], ["{title"]])("returns the not-JSON error for %j", (text) => {
    expect(editedArgumentsOf(text)).toEqual({ error: "Not JSON: write the arguments as a JSON object." });
  });

  it.each([["null"], ["[1]"], ['"x"'], ["3"]])("returns the not-an-object error for the JSON %s", (text) => {
    expect(editedArgumentsOf(text)).toEqual({ error: "The arguments must be a JSON object." });
  });

  it("returns the arguments of exactly MAX_EDITED_ARGUMENTS_CHARS characters, and the too-long error for one more", () => {
    const padded = (chars: number) => `{"t": "${"x".repeat(chars - 9)}"}`;
    expect(padded(MAX_EDITED_ARGUMENTS_CHARS)).toHaveLength(MAX_EDITED_ARGUMENTS_CHARS);
    expect(editedArgumentsOf(padded(MAX_EDITED_ARGUMENTS_CHARS))).toHaveProperty("args.t");
    expect(editedArgumentsOf(padded(MAX_EDITED_ARGUMENTS_CHARS + 1))).toEqual({ error: "Too long: the arguments may have at most 20,000 characters." });
  });
});

describe("an edit as a channel checks it (editedArgumentsOf, then editedArgumentIssues, then invalidEditText)", () => {
  /** A tool's schema as the registry records it on an approval: a closed object, a bounded string, and one field open to any JSON. */
  const SCHEMA = JSON.stringify({
    type: "object",
    properties: { title: { type: "string", minLength: 3, maxLength: 200 }, extra: {} },
    required: ["title"],
    additionalProperties: false,
  });
  const check = (typed: string) => {
    const edited = editedArgumentsOf(typed);
    if ("error" in edited) return edited.error;
    const issues = editedArgumentIssues(SCHEMA, edited.args);
    return invalidEditText(
      new ValidationError(
        "refused",
        issues.map((i) => ({ path: `args.${i.path}`, message: i.message })),
      ),
    );
  };

  it.each([
    ["typed as is", (text: string) => text],
    ["inside the field open to any JSON", (text: string) => `{"title": "abc", "extra": ${text}}`],
  ])(
    "does work linear in the text, whatever it holds, %s",
    (_, wrap) => {
      expectLinearWork(check, { wrap, numRuns: 4 });
    },
    LINEAR_WORK_TIMEOUT_MS,
  );
});

describe("invalidEditText", () => {
  it("returns each problem with its path under the arguments, joined", () => {
    const error = new ValidationError("refused", [
      { path: "args.title", message: "Too small" },
      { path: "args.(arguments)", message: "Unrecognized key" },
      { path: "args", message: "Expected object" },
    ]);
    expect(invalidEditText(error)).toBe("title: Too small; (arguments): Unrecognized key; (arguments): Expected object");
  });

  it("returns the error's message when it names no problem", () => {
    expect(invalidEditText(new ValidationError("the edit is refused"))).toBe("the edit is refused");
  });
});

const { database, stores } = useStoreFixture("channel_decisions", (db) => ({
  conversations: new ConversationStore(db),
  turns: new TurnStore(db),
  approvals: new ApprovalStore(db),
}));

const requester = slackPrincipal("T1", "U1");

/** A Slack conversation of workspace T1 whose turn waits on one call that only a `lead` may decide. */
async function waitingCall(): Promise<{ conversationId: string; approvalId: string; origin: TurnJob }> {
  const { _id: conversationId } = await stores.conversations.create(tenantOwner("slack", "T1"));
  const fence = heldFence(conversationId);
  const claim = await stores.turns.claim("turn-1", fence);
  if (!claim.claimed) throw new Error("not claimed");
  await stores.turns.awaitApproval(claim.turn, ["create_follow_up"], fence);
  const origin = sampleSlackJob({ principal: requester, content: "file a follow-up" });
  const approvalId = approvalIdOf(conversationId, "turn-1", "call-1");
  const args = { title: "x" };
  await stores.approvals.open(
    [
      {
        _id: approvalId,
        conversationId,
        turnId: "turn-1",
        toolCallId: "call-1",
        tool: "create_follow_up",
        args,
        argsHash: argsHash(args),
        requester,
        approvers: { requester: false, roles: ["lead"] },
        createdAt: new Date(),
        deadline: new Date(Date.now() + 3_600_000),
        status: "pending",
        origin: origin as unknown as Record<string, unknown>,
      },
    ],
    fence,
  );
  return { conversationId, approvalId, origin };
}

function decisions(slack: ChannelRolesMap, enqueued: TurnJob[] = []) {
  return webhookChannelDecisions(database.db, { retentionDays: 30, auth: { channelRoles: { slack, teams: {} } } as never }, async (job) => {
    enqueued.push(job);
  });
}

describe("webhookChannelDecisions", () => {
  it("takes the decision of a user whose workspace role may decide, and resumes the turn through the queue", async () => {
    const { conversationId, approvalId, origin } = await waitingCall();
    const enqueued: TurnJob[] = [];
    const result = await decisions({ T1: { users: { U2: ["lead"] } } }, enqueued).decide(slackPrincipal("T1", "U2"), conversationId, approvalId, {
      kind: "approve",
    });
    expect(result).toMatchObject({ decided: true, resumed: true, approval: { status: "approved" } });
    // The approval keeps no question: the worker takes the turn's own (`RESUMED_QUESTION` is what stands in for it).
    expect(enqueued).toEqual([{ ...origin, content: RESUMED_QUESTION, resume: expect.any(String) }]);
  });

  it("throws ForbiddenError for a user of the workspace without the role", async () => {
    const { conversationId, approvalId } = await waitingCall();
    await expect(
      decisions({ T1: { users: { U2: ["lead"] } } }).decide(slackPrincipal("T1", "U3"), conversationId, approvalId, { kind: "approve" }),
    ).rejects.toBeInstanceOf(ForbiddenError);
  });

  it("throws NotFoundError for a user of another workspace or a Teams user without a tenant, as the API answers for another's", async () => {
    const { conversationId, approvalId } = await waitingCall();
    const approvals = decisions({ T2: { users: { U2: ["lead"] } } });
    await expect(approvals.decide(slackPrincipal("T2", "U2"), conversationId, approvalId, { kind: "approve" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(approvals.decide(teamsPrincipal(null, "u") as never, conversationId, approvalId, { kind: "approve" })).rejects.toBeInstanceOf(NotFoundError);
  });

  it("throws RoleLookupError when the workspace's roles name groups and no directory was given", async () => {
    const { conversationId, approvalId } = await waitingCall();
    await expect(
      decisions({ T1: { groups: { S0LEADS: ["lead"] } } }).decide(slackPrincipal("T1", "U2"), conversationId, approvalId, { kind: "approve" }),
    ).rejects.toBeInstanceOf(RoleLookupError);
  });
});

describe("webhookChannelDecisions over contents sealed by the worker", () => {
  /** What the user asked and the model's arguments: neither may be stored where the webhook wrote. */
  const MARKER = "OKAPI-5521-SECRET";
  let worker: ThreadwiseDatabase;
  beforeAll(async () => {
    worker = new ThreadwiseDatabase(database.client, {
      dbName: database.dbName,
      contentKeys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "tw-webhook-"))),
    });
  });
  const raw = (id: string) => database.db.collection(COLLECTIONS.approvals).findOne({ _id: id as never });
  const rawText = (value: unknown): string =>
    value instanceof Binary
      ? Buffer.from(value.value()).toString("latin1")
      : value && typeof value === "object"
        ? Object.values(value).map(rawText).join(" ")
        : String(value);

  /** A turn the worker paused, its question and the call's arguments sealed, as in a deployment with encryption on. */
  async function sealedWaitingCall() {
    const { _id: conversationId } = await worker.conversations.create(tenantOwner("slack", "T1"));
    const fence = heldFence(conversationId);
    const origin = sampleSlackJob({ principal: requester, content: `file a follow-up about ${MARKER}` }) as unknown as Record<string, unknown>;
    const claim = await worker.turns.claim("turn-s", fence, { origin });
    if (!claim.claimed) throw new Error("not claimed");
    await worker.turns.awaitApproval(claim.turn, ["create_follow_up"], fence);
    const approvalId = approvalIdOf(conversationId, "turn-s", "call-1");
    const args = { title: `call ${MARKER}` };
    const approval = {
      _id: approvalId,
      conversationId,
      turnId: "turn-s",
      toolCallId: "call-1",
      tool: "create_follow_up",
      args,
      argsHash: argsHash(args),
      argsSchema: JSON.stringify({ type: "object", properties: { title: { type: "string" } }, required: ["title"] }),
      requester,
      approvers: { requester: false, roles: ["lead"] },
      createdAt: new Date(),
      deadline: new Date(Date.now() + 3_600_000),
      status: "pending" as const,
      origin,
    };
    await worker.approvals.open([approval], fence);
    return { conversationId, approvalId };
  }
  const lead = slackPrincipal("T1", "U2");
  const roles = { T1: { users: { U2: ["lead"] } } };

  it("stores the arguments sealed and the resume job without the question", async () => {
    const { approvalId } = await sealedWaitingCall();
    const stored = await raw(approvalId);
    expect(isCiphertext(stored?.args)).toBe(true);
    expect(rawText(stored)).not.toContain(MARKER);
    expect((await worker.approvals.get(approvalId))?.args).toEqual({ title: `call ${MARKER}` });
  });

  it("returns the approval to the webhook with its arguments withheld, never their ciphertext", async () => {
    const { conversationId, approvalId } = await sealedWaitingCall();
    const approval = await decisions(roles).forDecision(lead, conversationId, approvalId);
    expect(approval).toMatchObject({ args: {}, argsWithheld: true });
  });

  it("resumes the turn through the queue though the webhook cannot read the turn's sealed question", async () => {
    const { conversationId, approvalId } = await sealedWaitingCall();
    const enqueued: TurnJob[] = [];
    const result = await decisions(roles, enqueued).decide(lead, conversationId, approvalId, { kind: "approve" });
    expect(result).toMatchObject({ decided: true, resumed: true });
    expect(enqueued).toEqual([expect.objectContaining({ content: RESUMED_QUESTION, resume: expect.any(String) })]);
  });

  it("stores an edit without its arguments and hands them to the worker in the job, which stores them sealed", async () => {
    const { conversationId, approvalId } = await sealedWaitingCall();
    const enqueued: TurnJob[] = [];
    const edited = { title: `call ${MARKER} tomorrow` };
    await decisions(roles, enqueued).decide(lead, conversationId, approvalId, { kind: "edit", args: edited });
    const stored = await raw(approvalId);
    expect(stored?.decision).toMatchObject({ kind: "edit", argsHash: argsHash(edited) });
    expect(stored?.decision).not.toHaveProperty("args");
    expect(rawText(stored)).not.toContain(MARKER);
    expect(enqueued).toEqual([expect.objectContaining({ edits: { [approvalId]: edited } })]);
    expect(await worker.approvals.recordEdit(approvalId, edited)).toBe(true);
    expect(isCiphertext((await raw(approvalId))?.decision?.args)).toBe(true);
    expect((await worker.approvals.get(approvalId))?.decision).toMatchObject({ kind: "edit", args: edited });
  });

  it("refuses to record arguments other than those the webhook's decision names", async () => {
    const { conversationId, approvalId } = await sealedWaitingCall();
    await decisions(roles).decide(lead, conversationId, approvalId, { kind: "edit", args: { title: "what the approver typed" } });
    expect(await worker.approvals.recordEdit(approvalId, { title: "what a forged job says" })).toBe(false);
    expect((await raw(approvalId))?.decision).not.toHaveProperty("args");
  });
});
