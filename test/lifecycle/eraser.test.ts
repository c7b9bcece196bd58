import { BSON } from "mongodb";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { verifyReceipt, REDACTED_CONTENT, type DeletionReceipt } from "../../lib/lifecycle/eraser.js";
import { McpOAuthStore, tokenKey } from "../../lib/mcp/oauth/mcp-oauth-store.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { appMention, BOT_USER, envelope, TEAM } from "../channels/slack/fixtures.js";

const BOT_TOKEN = "xoxb-erasure-token";
const ADMIN = "threadwise:admin";
const OPERATOR = "ops:operator";
/** What only the erasure job and the audit log keep of an erased person: ids, never contents (docs/data-lifecycle.md). */
const KEEPERS: string[] = [COLLECTIONS.auditLog, COLLECTIONS.erasures];

let t: TestServer;
let slack: SlackApiEndpoint;

beforeAll(async () => {
  slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER, streaming: false });
  t = await startTestServer(
    {
      SLACK_API_URL: slack.slackApiUrl,
      TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always" } }),
      // Small enough that the follow-up's output is offloaded: the turn leaves an artifact.
      VIEW_TOOL_OUTPUT_TOKENS: "20",
      OPERATOR_ROLE: OPERATOR,
      TURN_MAX_RECEIVES: "1",
      // A limit, so that model calls are reserved and settled: usage is kept per user and day.
      LIMIT_USER_TOKENS_PER_DAY: "10000000",
      // Erasure by deletion, checked by reading every collection's raw text for the erased person's words, which
      // needs them in clear; the same erasure with contents encrypted (the tenant's keys shredded) is
      // test/crypto/contents-at-rest.test.ts's.
      CONTENT_ENCRYPTION: "off",
    },
    { channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN } } },
  );
});

afterAll(async () => {
  await t?.close();
  await slack?.close();
});

/** Every document of every collection (but the keepers) whose stored form contains one of `needles`, as `collection: count`. */
async function holding(...needles: string[]): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const name of Object.values(COLLECTIONS)) {
    if (KEEPERS.includes(name)) continue;
    for (const doc of await t.db.collection(name).find({}).toArray()) {
      const text = BSON.EJSON.stringify(doc);
      if (needles.some((n) => text.includes(n))) found[name] = (found[name] ?? 0) + 1;
    }
  }
  return found;
}

async function apiTurn(token: string, conversationId: string, content: string, key?: string) {
  return t.call("POST", `/v1/conversations/${conversationId}/messages`, { token, json: { content }, headers: key ? { "idempotency-key": key } : {} });
}

async function conversation(token: string): Promise<string> {
  return (await t.call("POST", "/v1/conversations", { token })).body.conversationId as string;
}

async function slackMessage(user: string, text: string, threadTs: string, ts: string): Promise<void> {
  const body = envelope(appMention({ user, ts, event_ts: ts, thread_ts: threadTs, text: `<@${BOT_USER}> ${text}` }));
  const response = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body });
  expect(response.status).toBe(200);
  await t.server.turnQueue.drain();
}

describe("Eraser", () => {
  describe("erase (a user)", () => {
    it("leaves nothing of an API user: conversations, artifacts, approvals, follow-ups, idempotency, usage, MCP token; another user keeps theirs", async () => {
      const alice = await t.token("alice", { tenant: "acme" });
      const bob = await t.token("bob", { tenant: "acme" });
      const admin = await t.token("root", { tenant: "acme", roles: [ADMIN] });
      const mine = await conversation(alice);
      expect((await apiTurn(alice, mine, "marker-alice-question one", "k-1")).status).toBe(200);
      const paused = await apiTurn(alice, mine, 'create_follow_up {"title": "marker-alice follow-up"}');
      expect(paused.body.status).toBe("awaiting_approval");
      const [approval] = paused.body.approvals as { approvalId: string }[];
      const decided = await t.call("POST", `/v1/conversations/${mine}/approvals/${approval.approvalId}`, { token: alice, json: { decision: "approve" } });
      expect(decided.status).toBe(200);
      await t.server.turnQueue.drain();
      await new McpOAuthStore(t.db).saveTokens(tokenKey(apiPrincipal("alice", "acme"), "acme", "crm", "https://crm.invalid/mcp"), {
        issuer: "api",
        tenant: "acme",
        subject: "alice",
        server: "crm",
        url: "https://crm.invalid/mcp",
        entryTenant: "acme",
        sealed: { v: 1, key: "k", iv: "i", tag: "t", data: "d" },
        accessExpiresAt: null,
        updatedAt: new Date(),
        retainUntil: new Date(Date.now() + 86_400_000),
      });
      const theirs = await conversation(bob);
      expect((await apiTurn(bob, theirs, "marker-bob-question")).status).toBe(200);
      const before = await holding("alice", "marker-alice");
      expect(before).toMatchObject({
        conversations: 1,
        artifacts: expect.any(Number),
        approvals: 1,
        follow_ups: 1,
        idempotency: expect.any(Number),
        usage_daily: expect.any(Number),
        mcp_oauth_tokens: 1,
      });

      const erased = await t.call("DELETE", "/v1/admin/users?issuer=api&tenant=acme&subject=alice", { token: admin });

      expect(erased.status).toBe(200);
      const receipt = erased.body as DeletionReceipt;
      expect(verifyReceipt(receipt)).toBe(true);
      expect(receipt.deleted).toMatchObject({ conversations: 1, approvals: 1, follow_ups: 1, mcp_oauth_tokens: 1 });
      expect(receipt.deleted.messages).toBeGreaterThanOrEqual(3);
      expect(receipt.deleted.artifacts).toBeGreaterThan(0);
      expect(receipt.pending.map((p) => p.where)).toContain("MongoDB backups");
      expect(await holding("alice", "marker-alice")).toEqual({});
      expect((await holding("marker-bob-question")).messages).toBeGreaterThan(0);
    });

    it("returns 403 to another tenant's admin, and erases nothing", async () => {
      const carol = await t.token("carol", { tenant: "acme" });
      const own = await conversation(carol);
      expect((await apiTurn(carol, own, "marker-carol")).status).toBe(200);
      const eve = await t.token("eve", { tenant: "globex", roles: [ADMIN] });
      const refused = await t.call("DELETE", "/v1/admin/users?issuer=api&tenant=acme&subject=carol", { token: eve });
      expect(refused.status).toBe(403);
      const colleague = await t.token("dora", { tenant: "acme" });
      expect((await t.call("DELETE", "/v1/admin/users?issuer=api&tenant=acme&subject=carol", { token: colleague })).status).toBe(403);
      expect((await holding("marker-carol")).messages).toBeGreaterThan(0);
    });

    it("removes an erased user from the API conversations shared with them, and keeps the conversation and its other members", async () => {
      const owner = await t.token("olga", { tenant: "acme" });
      const admin = await t.token("adam", { tenant: "acme", roles: [ADMIN] });
      const shared = await conversation(owner);
      for (const subject of ["mona", "nils"]) {
        expect((await t.call("POST", `/v1/conversations/${shared}/members`, { token: owner, json: { subject } })).status).toBe(201);
      }
      const mona = await t.token("mona", { tenant: "acme" });
      expect((await apiTurn(owner, shared, "marker-olga-shared")).status).toBe(200);
      const erased = await t.call("DELETE", "/v1/admin/users?issuer=api&tenant=acme&subject=mona", { token: admin });
      expect(erased.status).toBe(200);
      expect(JSON.stringify(erased.body)).toContain('"conversation_members":1');
      const doc = await t.db.collection(COLLECTIONS.conversations).findOne({ _id: shared as never });
      expect(doc?.members.map((m: { subject: string }) => m.subject)).toEqual(["nils"]);
      expect((await t.call("GET", `/v1/conversations/${shared}/messages`, { token: mona })).status).toBe(404);
      expect((await holding("marker-olga-shared")).messages).toBeGreaterThan(0);
    });

    it("redacts an erased Slack user's messages in a thread another user shares, keeps the other's, and the thread goes on", async () => {
      const root = "1700100000.000100";
      await slackMessage("U0ALICE", "marker-slack-alice asks first", root, root);
      await slackMessage("U0BOB", "marker-slack-bob asks next", root, "1700100001.000100");
      const operator = await t.token("op", { roles: [OPERATOR] });
      const tenantAdmin = await t.token("root", { tenant: "acme", roles: [ADMIN] });
      const path = `/v1/admin/users?issuer=slack&tenant=${TEAM}&subject=U0ALICE`;
      expect((await t.call("DELETE", path, { token: tenantAdmin })).status).toBe(403);

      const erased = await t.call("DELETE", path, { token: operator });

      expect(erased.status).toBe(200);
      // Alice's question and its answer, and Bob's answer where the model quoted her question.
      expect(erased.body.redacted).toMatchObject({ messages: 3, turns: 2 });
      expect(await holding("U0ALICE", "marker-slack-alice")).toEqual({});
      const thread = await t.db.collection("conversations").findOne({ "channel.key": { $regex: root.replace(".", "\\.") } });
      const record = await t.db.collection("messages").find({ conversationId: thread!._id }).sort({ seq: 1 }).toArray();
      expect(record.map((m) => [m.role, m.content])).toEqual([
        ["user", REDACTED_CONTENT],
        ["assistant", REDACTED_CONTENT],
        ["user", "marker-slack-bob asks next"],
        ["assistant", expect.stringContaining("marker-slack-bob asks next")],
      ]);
      await slackMessage("U0BOB", "marker-slack-bob again", root, "1700100002.000100");
      expect(await t.db.collection("messages").countDocuments({ conversationId: thread!._id })).toBe(6);
    });

    it("resumes an erasure cut short: a second request finishes the same job, and a finished one erases what came since", async () => {
      const frank = await t.token("frank", { tenant: "acme" });
      const admin = await t.token("root", { tenant: "acme", roles: [ADMIN] });
      for (let i = 0; i < 2; i++) expect((await apiTurn(frank, await conversation(frank), `marker-frank ${i}`)).status).toBe(200);
      // A job that stopped after its first phase, its current conversation counted and not yet deleted.
      const [first] = await t.db.collection("conversations").find({ "owner.subject": "frank" }).toArray();
      await t.db.collection(COLLECTIONS.erasures).insertOne({
        _id: "00000000-0000-4000-8000-000000000001" as never,
        target: { kind: "user", issuer: "api", tenant: "acme", subject: "frank" },
        targetKey: JSON.stringify({ issuer: "api", kind: "user", subject: "frank", tenant: "acme" }),
        requestedBy: { issuer: "api", tenant: "acme", subject: "root" },
        status: "running",
        done: [],
        deleted: { messages: 0 },
        redacted: {},
        current: { conversationId: first._id, counts: { conversations: 1, messages: 2 } },
        startedAt: new Date(),
        updatedAt: new Date(),
      });

      const resumed = await t.call("DELETE", "/v1/admin/users?issuer=api&tenant=acme&subject=frank", { token: admin });

      expect(resumed.body.receiptId).toBe("00000000-0000-4000-8000-000000000001");
      expect(resumed.body.deleted).toMatchObject({ conversations: 2, messages: 4 });
      expect(await holding("marker-frank")).toEqual({});
      const again = await t.call("DELETE", "/v1/admin/users?issuer=api&tenant=acme&subject=frank", { token: admin });
      expect(again.body.receiptId).not.toBe(resumed.body.receiptId);
      expect(again.body.deleted).toEqual({});
    });
  });

  describe("erase (a tenant)", () => {
    it("leaves nothing of the tenant: its users' conversations, limits and MCP servers; the receipt says it was by deletion", async () => {
      const admin = await t.token("boss", { tenant: "initech", roles: [ADMIN] });
      for (const user of ["peter", "milton"]) {
        const token = await t.token(user, { tenant: "initech" });
        expect((await apiTurn(token, await conversation(token), `marker-initech ${user}`)).status).toBe(200);
      }
      const limits = await t.call("PUT", "/v1/admin/limits", { token: admin, json: { issuer: "api", tenant: "initech", limits: { turnsPerMinute: 9 } } });
      expect(limits.status).toBe(200);
      const server = { name: "wiki", transport: { kind: "streamable-http", url: "https://wiki.example.com/mcp" } };
      expect((await t.call("PUT", "/v1/admin/mcp-servers", { token: admin, json: { issuer: "api", tenant: "initech", server } })).status).toBe(200);

      const erased = await t.call("DELETE", "/v1/admin/tenants?issuer=api&tenant=initech", { token: admin });

      expect(erased.status).toBe(200);
      expect(erased.body.deleted).toMatchObject({ conversations: 2, limit_overrides: 1, mcp_servers: 1 });
      expect(erased.body.method).toBe("deletion");
      expect(erased.body.notes.join(" ")).toContain("content encryption is off (CONTENT_ENCRYPTION=off): the tenant was erased by deleting its documents");
      expect(await holding("initech")).toEqual({});
    });
  });

  describe("erase (a conversation)", () => {
    it("erases a Slack thread for an operator, and answers 404 to a tenant admin of another tenant", async () => {
      const root = "1700200000.000100";
      await slackMessage("U0CAROL", "marker-thread-only", root, root);
      const thread = await t.db.collection("conversations").findOne({ "channel.key": { $regex: root.replace(".", "\\.") } });
      const path = `/v1/admin/conversations/${thread!._id}`;
      const stranger = await t.token("root", { tenant: "acme", roles: [ADMIN] });
      expect((await t.call("DELETE", path, { token: stranger })).status).toBe(404);

      const erased = await t.call("DELETE", path, { token: await t.token("op", { roles: [OPERATOR] }) });

      expect(erased.status).toBe(200);
      expect(erased.body.deleted).toMatchObject({ conversations: 1 });
      expect(await holding("marker-thread-only")).toEqual({});
      const audit = await t.call("GET", `/v1/admin/audit?issuer=slack&tenant=${TEAM}`, { token: await t.token("op", { roles: [OPERATOR] }) });
      expect(audit.body.records.map((r: { action: string }) => r.action)).toContain("erasure");
    });
  });
});
