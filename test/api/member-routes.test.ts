import { z } from "zod";
import { AuditLog } from "../../lib/audit/audit-log.js";
import { DEFAULT_LIMITS_ADMIN_ROLE } from "../../lib/config/limits-config.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../support/converse-endpoint.js";
import { Gate } from "../support/gate.js";
import { openEventStream } from "../support/sse-client.js";

/**
 * API conversation members (issue 43, "Conversations shared on purpose"; issue 42, "one ownership
 * check"), from the attacker's side: real signed tokens over HTTP against the local server, the
 * real Converse client against the scripted model, the stores read back with the raw driver.
 */

/** Holds a turn in its tool until the test opens the gate. */
let toolGate = new Gate();
const waitTool: ToolDefinition = {
  name: "wait_for_test",
  description: "Waits until the test lets it finish.",
  schema: z.object({}),
  sideEffects: false,
  run: async () => {
    await toolGate.pass();
    return "finished waiting";
  },
};
/** Who ran the role-gated tool, with which roles. */
const secretRuns: { subject: string; roles: string[] }[] = [];
const secretTool: ToolDefinition = {
  name: "sql_query",
  description: "Reads what only analysts may read.",
  schema: z.object({}),
  sideEffects: false,
  run: async (_input, ctx) => {
    secretRuns.push({ subject: ctx.caller.principal.subject, roles: ctx.caller.roles });
    return "the secret figure is 42";
  },
};

const offered = (request: ConverseRequest) => (request.toolConfig?.tools ?? []).flatMap((t) => ("toolSpec" in t ? [t.toolSpec.name] : []));

function respond(request: ConverseRequest): ScriptedReply {
  const question = lastUserText(request);
  const toolResults = request.messages.at(-1)!.content.some((b) => "toolResult" in b);
  if (toolResults) return { text: "Done." };
  if (question.includes("wait")) return { text: "Waiting now.", toolUses: [{ name: "wait_for_test", input: {} }] };
  if (question.includes("secret")) {
    return offered(request).includes("sql_query") ? { toolUses: [{ name: "sql_query", input: {} }] } : { text: "I cannot look that up for you." };
  }
  return { text: "Hello." };
}

let converse: ConverseEndpoint;
let t: TestServer;
let alice: string;
let bob: string;
let carol: string;
let dave: string;
let acmeAdmin: string;
let globexAdmin: string;
let globexMallory: string;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  t = await startTestServer(
    { MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "m", TOOL_ROLES: JSON.stringify({ sql_query: ["analyst"] }) },
    { app: { tools: [waitTool, secretTool] } },
  );
  [alice, bob, carol, dave, acmeAdmin, globexAdmin, globexMallory] = await Promise.all([
    t.token("alice", { tenant: "acme", roles: ["analyst"] }),
    t.token("bob", { tenant: "acme", roles: ["viewer"] }),
    t.token("carol", { tenant: "acme", roles: ["analyst"] }),
    t.token("dave", { tenant: "acme", roles: ["analyst"] }),
    t.token("ann", { tenant: "acme", roles: [DEFAULT_LIMITS_ADMIN_ROLE] }),
    t.token("gus", { tenant: "globex", roles: [DEFAULT_LIMITS_ADMIN_ROLE] }),
    t.token("mallory", { tenant: "globex", roles: ["analyst"] }),
  ]);
});

afterAll(async () => {
  await t?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

/** A conversation of alice's shared with `members` (each added by alice: 201). */
async function shared(...members: string[]): Promise<string> {
  const id = (await t.call("POST", "/v1/conversations", { token: alice })).body.conversationId as string;
  for (const subject of members) {
    const added = await t.call("POST", `/v1/conversations/${id}/members`, { token: alice, json: { subject } });
    expect(added.status, `add ${subject}`).toBe(201);
  }
  return id;
}

/** The conversation's members as stored, and the audit records of acme's chain: what an attempt must leave as it was. */
async function stored(id: string) {
  const doc = await t.db.collection(COLLECTIONS.conversations).findOne({ _id: id as never });
  const audit = await t.db.collection(COLLECTIONS.auditLog).countDocuments({ action: { $in: ["conversation.member.add", "conversation.member.remove"] } });
  return { members: (doc?.members ?? []).map((m: { subject: string }) => m.subject), audit };
}

describe("memberRoutes", () => {
  describe("a colleague of the same tenant who is not a member", () => {
    it("gets 404 on the record, state, archive, turns, inspector, events, members, a turn and every Agent Protocol route, while the member reads", async () => {
      const id = await shared("bob");
      const turn = await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "hello" } });
      expect(turn.status).toBe(200);
      const { turnId } = turn.body;
      const reads = [
        ["GET", `/v1/conversations/${id}`],
        ["GET", `/v1/conversations/${id}/messages`],
        ["GET", `/v1/conversations/${id}/state`],
        ["GET", `/v1/conversations/${id}/archive`],
        ["GET", `/v1/conversations/${id}/turns`],
        ["GET", `/v1/conversations/${id}/turns/${turnId}`],
        ["GET", `/v1/conversations/${id}/approvals`],
        ["GET", `/v1/conversations/${id}/members`],
        ["GET", `/threads/${id}`],
        ["GET", `/threads/${id}/state`],
        ["GET", `/threads/${id}/runs`],
        ["GET", `/threads/${id}/runs/${turnId}`],
      ] as const;
      for (const [method, path] of reads) {
        expect((await t.call(method, path, { token: bob })).status, `member: ${method} ${path}`).toBe(200);
        const res = await t.call(method, path, { token: carol });
        expect(res.status, `colleague: ${method} ${path}`).toBe(404);
        expect(res.body.error.code).toBe("not_found");
      }
      const writes = [
        ["POST", `/v1/conversations/${id}/messages`, { content: "let me in" }],
        ["POST", `/v1/conversations/${id}/turns/${turnId}/regenerate`, {}],
        ["POST", `/v1/conversations/${id}/members`, { subject: "carol" }],
        ["DELETE", `/v1/conversations/${id}`, undefined],
        ["POST", `/threads/${id}/runs/wait`, { assistant_id: "threadwise", input: { messages: [{ role: "user", content: "let me in" }] } }],
        ["PATCH", `/threads/${id}`, { metadata: { mine: true } }],
      ] as const;
      for (const [method, path, json] of writes) {
        const res = await t.call(method, path, { token: carol, json });
        expect(res.status, `colleague: ${method} ${path}`).toBe(404);
      }
      const events = await fetch(`${t.url}/v1/conversations/${id}/turns/${turnId}/events`, { headers: { authorization: `Bearer ${carol}` } });
      expect(events.status).toBe(404);
      await events.body?.cancel();
      // Nothing of carol's was stored, and the list shows her nothing of alice's.
      const record = await t.call("GET", `/v1/conversations/${id}/messages`, { token: alice });
      expect(record.body.messages.map((m: { content: string }) => m.content)).toEqual(["hello", "Hello."]);
      expect((await t.call("GET", "/v1/conversations", { token: carol })).body.conversations).toEqual([]);
      expect(await stored(id)).toMatchObject({ members: ["bob"] });
      // The member's list shows the shared conversation.
      const listed = (await t.call("GET", "/v1/conversations", { token: bob })).body.conversations.map((c: { conversationId: string }) => c.conversationId);
      expect(listed).toContain(id);
    });
  });

  describe("POST /v1/conversations/{id}/members", () => {
    it("returns 422 member_outside_tenant for a user of another tenant, and nothing changes", async () => {
      const id = await shared("bob");
      const before = await stored(id);
      for (const json of [{ subject: "mallory", tenant: "globex" }, { subject: "mallory", tenant: null }, { subject: "alice" }]) {
        const res = await t.call("POST", `/v1/conversations/${id}/members`, { token: alice, json });
        expect(res.status, JSON.stringify(json)).toBe(422);
        expect(res.body.error.code).toBe("member_outside_tenant");
      }
      expect(await stored(id)).toEqual(before);
      expect((await t.call("GET", `/v1/conversations/${id}/messages`, { token: globexMallory })).status).toBe(404);
    });

    it("returns 404 to another tenant's admin, whichever tenant the body names, and nothing changes", async () => {
      const id = await shared("bob");
      const before = await stored(id);
      for (const json of [{ subject: "gina" }, { subject: "gina", tenant: "globex" }, { subject: "carol", tenant: "acme" }]) {
        const res = await t.call("POST", `/v1/conversations/${id}/members`, { token: globexAdmin, json });
        expect(res.status, JSON.stringify(json)).toBe(404);
      }
      expect((await t.call("DELETE", `/v1/conversations/${id}/members/bob`, { token: globexAdmin })).status).toBe(404);
      expect((await t.call("GET", `/v1/conversations/${id}/members`, { token: globexAdmin })).status).toBe(404);
      expect(await stored(id)).toEqual(before);
    });

    it("returns 403 to a member who adds or removes another, and lets the tenant admin add and remove without reading the conversation", async () => {
      const id = await shared("bob", "dave");
      const before = await stored(id);
      const added = await t.call("POST", `/v1/conversations/${id}/members`, { token: bob, json: { subject: "carol" } });
      expect(added.status).toBe(403);
      expect(added.body.error.message).toMatch(/owner or a tenant admin/);
      expect((await t.call("DELETE", `/v1/conversations/${id}/members/dave`, { token: bob })).status).toBe(403);
      expect((await t.call("DELETE", `/v1/conversations/${id}`, { token: bob })).status).toBe(403);
      expect(await stored(id)).toEqual(before);
      expect((await t.call("GET", `/v1/conversations/${id}/messages`, { token: carol })).status).toBe(404);

      const byAdmin = await t.call("POST", `/v1/conversations/${id}/members`, { token: acmeAdmin, json: { subject: "carol" } });
      expect(byAdmin.status).toBe(201);
      expect(byAdmin.body.members.map((m: { subject: string }) => m.subject)).toEqual(["bob", "dave", "carol"]);
      expect(byAdmin.body.members[2].addedBy).toEqual({ issuer: "api", tenant: "acme", subject: "ann" });
      expect((await t.call("GET", `/v1/conversations/${id}/messages`, { token: carol })).status).toBe(200);
      // The admin manages members; reading the conversation takes being one.
      expect((await t.call("GET", `/v1/conversations/${id}/messages`, { token: acmeAdmin })).status).toBe(404);
      expect((await t.call("DELETE", `/v1/conversations/${id}/members/carol`, { token: acmeAdmin })).status).toBe(204);
      expect((await t.call("GET", `/v1/conversations/${id}/messages`, { token: carol })).status).toBe(404);
      // A member may leave.
      expect((await t.call("DELETE", `/v1/conversations/${id}/members/dave`, { token: dave })).status).toBe(204);
      expect(await stored(id)).toMatchObject({ members: ["bob"] });
    });

    it("answers 200 and changes nothing when the user is already a member", async () => {
      const id = await shared("bob");
      const before = await stored(id);
      const again = await t.call("POST", `/v1/conversations/${id}/members`, { token: alice, json: { subject: "bob" } });
      expect(again.status).toBe(200);
      expect(await stored(id)).toEqual(before);
    });
  });

  describe("DELETE /v1/conversations/{id}/members/{memberId}", () => {
    it("takes access away at once: the next read is 404, and a stream the member follows ends as not_found before the turn's next event", async () => {
      toolGate = new Gate();
      const id = await shared("bob");
      const running = t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "please wait" } });
      await toolGate.reached;
      const [turn] = (await t.call("GET", `/v1/conversations/${id}/turns?status=running`, { token: alice })).body.turns;
      const stream = await openEventStream(`${t.url}/v1/conversations/${id}/turns/${turn.turnId}/events`, { headers: { authorization: `Bearer ${bob}` } });
      expect(stream.status).toBe(200);
      expect((await stream.next())?.event).toBe("turn");
      expect((await stream.next())?.event).toBeDefined();

      expect((await t.call("DELETE", `/v1/conversations/${id}/members/bob`, { token: alice })).status).toBe(204);
      expect((await t.call("GET", `/v1/conversations/${id}/messages`, { token: bob })).status).toBe(404);
      expect((await t.call("GET", `/v1/conversations/${id}/state`, { token: bob })).status).toBe(404);
      toolGate.open();
      // What was sent before the removal may still be in flight; nothing after it is sent, and the stream says why it ends.
      const rest = await stream.rest();
      expect(rest.at(-1)).toMatchObject({ event: "failed", data: { code: "not_found" } });
      expect(rest.filter((e) => e.event === "done" || e.event === "tool_finished")).toEqual([]);
      expect(JSON.stringify(rest)).not.toContain("Done.");
      expect(JSON.stringify(rest)).not.toContain("finished waiting");
      expect((await running).status).toBe(200);
      expect((await t.call("DELETE", `/v1/conversations/${id}/members/bob`, { token: alice })).status).toBe(404);
    });
  });

  describe("DELETE /v1/conversations/{id}/members/{memberId} during an Agent Protocol run stream", () => {
    it("ends the removed member's run stream with an error frame not_found, and sends none of the run's end", async () => {
      toolGate = new Gate();
      const id = await shared("bob");
      const running = t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "please wait" } });
      await toolGate.reached;
      const [turn] = (await t.call("GET", `/v1/conversations/${id}/turns?status=running`, { token: alice })).body.turns;
      const stream = await openEventStream(`${t.url}/threads/${id}/runs/${turn.turnId}/stream`, { headers: { authorization: `Bearer ${bob}` } });
      expect(stream.status).toBe(200);
      expect((await stream.next())?.event).toBe("metadata");
      expect(await stream.next()).toBeDefined();

      expect((await t.call("DELETE", `/v1/conversations/${id}/members/bob`, { token: alice })).status).toBe(204);
      expect((await t.call("GET", `/threads/${id}`, { token: bob })).status).toBe(404);
      toolGate.open();
      const rest = await stream.rest();
      expect(rest.at(-1)).toMatchObject({ event: "error", data: { error: "not_found" } });
      expect(JSON.stringify(rest)).not.toContain("Done.");
      expect(JSON.stringify(rest)).not.toContain("finished waiting");
      expect((await running).status).toBe(200);
    });
  });

  describe("a member's turn", () => {
    it("runs as the member with the member's roles (TOOL_ROLES), not the owner's", async () => {
      const id = await shared("bob", "dave");
      secretRuns.length = 0;
      const before = converse.requests.length;
      const byBob = await t.call("POST", `/v1/conversations/${id}/messages`, { token: bob, json: { content: "the secret please" } });
      expect(byBob.status).toBe(200);
      expect(byBob.body.answer).toBe("I cannot look that up for you.");
      const bobsRequests = converse.requests.slice(before).flatMap((r) => (r.body ? [offered(r.body)] : []));
      expect(bobsRequests.length).toBeGreaterThan(0);
      for (const tools of bobsRequests) expect(tools).not.toContain("sql_query");
      expect(secretRuns).toEqual([]);

      const byDave = await t.call("POST", `/v1/conversations/${id}/messages`, { token: dave, json: { content: "the secret again" } });
      expect(byDave.status).toBe(200);
      expect(secretRuns).toEqual([{ subject: "dave", roles: ["analyst"] }]);
    });

    it("runs through the Agent Protocol as the member too", async () => {
      const id = await shared("bob");
      secretRuns.length = 0;
      const run = await t.call("POST", `/threads/${id}/runs/wait`, {
        token: bob,
        json: { assistant_id: "threadwise", input: { messages: [{ role: "user", content: "a secret" }] } },
      });
      expect(run.status).toBe(200);
      expect(secretRuns).toEqual([]);
      expect((await t.call("DELETE", `/threads/${id}`, { token: bob })).status).toBe(403);
    });
  });

  describe("the audit log", () => {
    it("records each change with the member lists before and after, in acme's chain, which verifies", async () => {
      const id = await shared("bob");
      expect((await t.call("POST", `/v1/conversations/${id}/members`, { token: acmeAdmin, json: { subject: "carol" } })).status).toBe(201);
      expect((await t.call("DELETE", `/v1/conversations/${id}/members/bob`, { token: alice })).status).toBe(204);
      const records = await t.db
        .collection(COLLECTIONS.auditLog)
        .find({ "resource.conversationId": id, action: { $in: ["conversation.member.add", "conversation.member.remove"] } })
        .sort({ seq: 1 })
        .toArray();
      const who = (list: { members: { subject: string }[] }) => list.members.map((m) => m.subject);
      expect(records.map((r) => [r.action, r.actor.subject, who(r.before), who(r.after)])).toEqual([
        ["conversation.member.add", "alice", [], ["bob"]],
        ["conversation.member.add", "ann", ["bob"], ["bob", "carol"]],
        ["conversation.member.remove", "alice", ["bob", "carol"], ["carol"]],
      ]);
      expect(records.every((r) => r.chain === JSON.stringify(["api", "acme"]))).toBe(true);
      const audit = new AuditLog(t.db, { retentionDays: 1 });
      expect((await audit.verify({ issuer: "api", tenant: "acme" })).problems).toEqual([]);
      // The admin reads them through the audit API.
      const page = await t.call("GET", "/v1/admin/audit?issuer=api&tenant=acme", { token: acmeAdmin });
      expect(page.body.records.filter((r: { resource: { conversationId?: string } }) => r.resource.conversationId === id)).toHaveLength(3);
    });
  });
});
