import { describe, expect, it } from "vitest";
import { slackPrincipal, teamsPrincipal, tenantOwner } from "../../lib/auth/principal.js";
import { editedArgumentsOf, invalidEditText, MAX_EDITED_ARGUMENTS_CHARS, webhookChannelDecisions } from "../../lib/channels/channel-decisions.js";
import type { ChannelRolesMap } from "../../lib/config/auth-config.js";
import { ForbiddenError, NotFoundError, RoleLookupError, ValidationError } from "../../lib/errors.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { ApprovalStore, approvalIdOf, argsHash } from "../../lib/store/approval-store.js";
import { ConversationStore } from "../../lib/store/conversation-store.js";
import { TurnStore } from "../../lib/store/turn-store.js";
import { editedArgumentIssues } from "../../lib/approvals/edited-arguments.js";
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
    expect(enqueued).toEqual([{ ...origin, resume: expect.any(String) }]);
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
