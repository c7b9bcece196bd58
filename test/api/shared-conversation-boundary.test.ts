import { startTestServer, type TestServer } from "../support/api-client.js";
import {
  blockText,
  lastUserText,
  startConverseEndpoint,
  type ConverseEndpoint,
  type ConverseRequest,
  type ScriptedReply,
} from "../support/converse-endpoint.js";

/**
 * The data boundary of an API conversation shared on purpose (issue 43): alice (analyst) runs a
 * role-gated query in her conversation and adds bob (viewer) as a member. Bob's Converse request, his
 * reads of the conversation's state and the inspector of alice's turn hold none of her rows, and say
 * something is withheld; alice still sees them.
 */

const DISCOUNT_SQL =
  "SELECT customer, region, round(sum(discount_amount)) AS discount FROM sales WHERE month = '2026-10' " +
  "GROUP BY customer, region ORDER BY discount DESC LIMIT 5";
const GATED_ROWS = ["Cobalt Ridge Hospitals", "Helios Freight Group", "Juniper Street Markets"];

function respond(request: ConverseRequest): ScriptedReply {
  if (request.messages.at(-1)?.content.some((b) => "toolResult" in b)) return { text: "Done: I looked at it." };
  if (lastUserText(request).includes("which customers")) return { text: "Querying.", toolUses: [{ name: "sql_query", input: { sql: DISCOUNT_SQL } }] };
  return { text: "Noted." };
}

let converse: ConverseEndpoint;
let t: TestServer;
let alice: string;
let bob: string;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  t = await startTestServer({ MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "m", TOOL_ROLES: JSON.stringify({ sql_query: ["analyst"] }) });
  alice = await t.token("alice", { tenant: "acme", roles: ["analyst"] });
  bob = await t.token("bob", { tenant: "acme", roles: ["viewer"] });
});

afterAll(async () => {
  await t?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

const expectNoGatedRows = (text: string) => {
  for (const row of GATED_ROWS) expect(text).not.toContain(row);
};

describe("a shared API conversation's data boundary", () => {
  let id: string;
  let aliceTurn: string;
  let bobRequest: ConverseRequest;

  beforeAll(async () => {
    id = (await t.call("POST", "/v1/conversations", { token: alice })).body.conversationId as string;
    expect((await t.call("POST", `/v1/conversations/${id}/members`, { token: alice, json: { subject: "bob" } })).status).toBe(201);
    expect((await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "which customers drove the discounts?" } })).status).toBe(
      200,
    );
    aliceTurn = (await t.call("GET", `/v1/conversations/${id}/turns`, { token: alice })).body.turns[0].turnId as string;
    const before = converse.requests.length;
    expect((await t.call("POST", `/v1/conversations/${id}/messages`, { token: bob, json: { content: "what did the analysis find?" } })).status).toBe(200);
    bobRequest = converse.requests.slice(before).find((r) => r.operation !== "count-tokens" && r.body)?.body as ConverseRequest;
  });

  it("sends bob's model none of alice's rows, and says her output is withheld", () => {
    const text = [...(bobRequest.system ?? []).map((b) => ("text" in b ? b.text : "")), ...bobRequest.messages.flatMap((m) => m.content.map(blockText))].join(
      "\n",
    );
    expect(text).toContain("which customers drove the discounts?");
    expectNoGatedRows(text);
    expect(text).toContain("[Withheld: what sql_query was asked and returned is hidden from you because it needs the role analyst");
  });

  it("shows bob the state without alice's rows, and alice with them", async () => {
    const forBob = await t.call("GET", `/v1/conversations/${id}/state`, { token: bob });
    expect(forBob.status).toBe(200);
    expectNoGatedRows(JSON.stringify(forBob.body));
    expect(JSON.stringify(forBob.body)).toContain("[Withheld:");
    expect(JSON.stringify((await t.call("GET", `/v1/conversations/${id}/state`, { token: alice })).body)).toContain("Cobalt Ridge Hospitals");
  });

  it("shows bob the inspector of alice's turn as a notice, and alice her whole views", async () => {
    const forBob = await t.call("GET", `/v1/conversations/${id}/turns/${aliceTurn}`, { token: bob });
    expect(forBob.status).toBe(200);
    expectNoGatedRows(JSON.stringify(forBob.body));
    expect(JSON.stringify(forBob.body)).toContain("drew on data you may not see");
    expect(JSON.stringify((await t.call("GET", `/v1/conversations/${id}/turns/${aliceTurn}`, { token: alice })).body)).toContain("Cobalt Ridge Hospitals");
  });
  it("shows bob the thread through the Agent Protocol without alice's rows (state, thread, history, a run's result), and alice with them", async () => {
    const reads = [
      await t.call("GET", `/threads/${id}/state`, { token: bob }),
      await t.call("GET", `/threads/${id}`, { token: bob }),
      await t.call("POST", `/threads/${id}/history`, { token: bob, json: {} }),
      await t.call("POST", `/threads/${id}/runs/wait`, {
        token: bob,
        json: { assistant_id: "threadwise", input: { messages: [{ role: "user", content: "anything else?" }] } },
      }),
    ];
    for (const read of reads) {
      expect(read.status).toBe(200);
      expectNoGatedRows(JSON.stringify(read.body));
      expect(JSON.stringify(read.body)).toContain("[Withheld:");
    }
    expect(JSON.stringify((await t.call("GET", `/threads/${id}/state`, { token: alice })).body)).toContain("Cobalt Ridge Hospitals");
  });
});
