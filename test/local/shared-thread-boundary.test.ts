import type { ModelCallRecord } from "../../lib/store/turn-record.js";
import { callsSeenBy } from "../../lib/store/turn-record.js";
import { slackPrincipal, teamsPrincipal, type Caller } from "../../lib/auth/principal.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import {
  blockText,
  lastUserText,
  startConverseEndpoint,
  type ConverseEndpoint,
  type ConverseRequest,
  type ScriptedReply,
} from "../support/converse-endpoint.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { appMention, BOT_USER, CHANNEL, envelope, TEAM } from "../channels/slack/fixtures.js";
import { BOT_ACCOUNT, messageActivity, TENANT } from "../channels/teams/fixtures.js";

/**
 * The shared thread of issue 43, from the attacker's side: `TOOL_ROLES={"sql_query":["analyst"]}`;
 * analyst A runs a 5-row discount query and a 300-row query (offloaded to an artifact) and posts
 * answers that name no rows; viewer B asks next in the same thread, tries A's artifact handle, and
 * after 6 filler turns searches the conversation. B's Converse requests, search results,
 * `read_tool_output`, time-anchor ledger and the inspector's records hold none of A's rows, and B
 * is told something is withheld. Driven through signed Slack requests and Bot Framework (Teams
 * `groupChat`) requests, with the real `ChatBedrockConverse` against the Converse stand-in.
 */

const BOT_TOKEN = "xoxb-shared-thread-token";
const APP_PASSWORD = "shared-thread-client-secret";
const ANALYST_AAD = "6f0c0000-0000-4000-8000-00000000a043";
const VIEWER_AAD = "6f0c0000-0000-4000-8000-00000000b043";
const GROUP_CHAT = "19:shared-group-chat-43@thread.v2";

const DISCOUNT_SQL =
  "SELECT customer, region, round(sum(discount_amount)) AS discount, round(100.0*sum(gross_profit)/sum(revenue),1) AS margin_pct " +
  "FROM sales WHERE month = '2026-10' GROUP BY customer, region ORDER BY discount DESC LIMIT 5";
const LINES_SQL = "SELECT line_id, order_date, customer, region, product, revenue FROM sales WHERE month = '2026-10' ORDER BY line_id LIMIT 300";
/** Rows A's first query returns, as the sample database has them (the discounted customers of October 2026). */
const GATED_ROWS = ["Cobalt Ridge Hospitals", "Helios Freight Group", "Juniper Street Markets"];

/** What the artifact handle of A's offloaded output is, once A's turn stored it; B's scripted model tries it. */
let stolenHandle = "";

function toolResultText(request: ConverseRequest): string | undefined {
  const results = request.messages.at(-1)?.content.flatMap((b) => ("toolResult" in b ? [b.toolResult] : [])) ?? [];
  return results.length === 0 ? undefined : results.map((r) => r.content.map((c) => ("text" in c ? c.text : JSON.stringify(c.json))).join("")).join("\n");
}

/** The scripted model: A's questions call sql_query, B's call read_tool_output and search_conversation; answers name no rows. */
function respond(request: ConverseRequest): ScriptedReply {
  const text = lastUserText(request);
  if (toolResultText(request) !== undefined) return { text: "Done: I looked at it." };
  if (text.includes("which customers drove the discounts")) return { text: "Querying.", toolUses: [{ name: "sql_query", input: { sql: DISCOUNT_SQL } }] };
  if (text.includes("every order line")) return { text: "Querying.", toolUses: [{ name: "sql_query", input: { sql: LINES_SQL } }] };
  if (text.includes("open the big output"))
    return { text: "Reading.", toolUses: [{ name: "read_tool_output", input: { handle: stolenHandle, search: "West" } }] };
  if (text.includes("search the thread")) {
    return { text: "Searching.", toolUses: [{ name: "search_conversation", input: { query: "which customers drove the discounts, and their margin" } }] };
  }
  return { text: `Noted: ${text.slice(0, 40)}` };
}

let converse: ConverseEndpoint;
let slackApi: SlackApiEndpoint;
let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let t: TestServer;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER });
  issuer = await startBotFrameworkIssuer();
  connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD });
  t = await startTestServer(
    {
      // Contents stored clear: the raw reads below check what was stored (sealing: test/crypto/contents-at-rest.test.ts).
      CONTENT_ENCRYPTION: "off",
      MODEL_PROVIDER: "bedrock",
      // A short window, so A's turns leave it after B's fillers and their time anchors go to the ledger.
      VIEW_FINISHED_TURNS: "2",
      VIEW_HISTORY_BLOCK_TURNS: "1",
      SLACK_API_URL: slackApi.slackApiUrl,
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
      TEAMS_GRAPH_URL: connector.graphUrl,
      TOOL_ROLES: JSON.stringify({ sql_query: ["analyst"] }),
      SLACK_ROLES: JSON.stringify({ [TEAM]: { default: ["viewer"], users: { U0ANNA: ["analyst"] } } }),
      TEAMS_ROLES: JSON.stringify({ [TENANT]: { default: ["viewer"], users: { [ANALYST_AAD]: ["analyst"] } } }),
    },
    {
      channels: {
        slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN },
        teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD },
      },
    },
  );
}, 60_000);

afterAll(async () => {
  await t?.close();
  await slackApi?.close();
  await connector?.close();
  await issuer?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

/** Every text of a Converse request: system part, messages, tool inputs and results. */
function requestText(request: ConverseRequest): string {
  return [...(request.system ?? []).map((b) => ("text" in b ? b.text : "")), ...request.messages.flatMap((m) => m.content.map(blockText))].join("\n");
}

function expectNoGatedRows(text: string) {
  for (const row of GATED_ROWS) expect(text).not.toContain(row);
}

interface Channel {
  name: string;
  ask(user: "analyst" | "viewer", text: string): Promise<void>;
  viewer: Caller;
  conversationId(): Promise<string>;
}

let slackCounter = 0;
const THREAD_TS = "1700043000.000100";
const slack: Channel = {
  name: "Slack channel thread (signed Events API requests)",
  async ask(user, text) {
    slackCounter += 1;
    const ts = slackCounter === 1 ? THREAD_TS : `17000430${String(slackCounter).padStart(2, "0")}.000100`;
    const event = appMention({ user: user === "analyst" ? "U0ANNA" : "U0BEN", ts, event_ts: ts, text: `<@${BOT_USER}> ${text}` });
    if (slackCounter > 1) event.thread_ts = THREAD_TS;
    const body = envelope(event);
    const response = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body });
    expect(response.status).toBe(200);
    await t.server.turnQueue.drain();
  },
  viewer: { principal: slackPrincipal(TEAM, "U0BEN"), roles: ["viewer"] },
  async conversationId() {
    const doc = await t.db.collection("conversations").findOne({ "channel.key": `slack:${TEAM}:${CHANNEL}:${THREAD_TS}` });
    return String(doc?._id);
  },
};

const teams: Channel = {
  name: "Teams group chat (Bot Framework requests)",
  async ask(user, text) {
    const from = user === "analyst" ? { id: "29:anna", name: "Anna", aadObjectId: ANALYST_AAD } : { id: "29:ben", name: "Ben", aadObjectId: VIEWER_AAD };
    const activity = messageActivity(connector.serviceUrl, {
      from,
      conversation: { isGroup: true, conversationType: "groupChat", tenantId: TENANT, id: GROUP_CHAT },
      text: `<at>Threadwise</at> ${text}`,
      entities: [{ type: "mention", text: "<at>Threadwise</at>", mentioned: { id: BOT_ACCOUNT, name: "Threadwise" } }],
    });
    const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
    const response = await fetch(`${t.url}/teams/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(activity),
    });
    expect(response.status).toBe(202);
    await t.server.turnQueue.drain();
  },
  viewer: { principal: teamsPrincipal(TENANT, VIEWER_AAD), roles: ["viewer"] },
  async conversationId() {
    const doc = await t.db.collection("conversations").findOne({ "channel.key": { $regex: GROUP_CHAT.replace(/[.]/g, "\\.") } });
    return String(doc?._id);
  },
};

describe.each([slack, teams])("a shared thread's data boundary: $name", (channel) => {
  let before = 0;
  /** B's Converse requests, from B's first question on. */
  const viewerRequests = () => converse.requests.slice(before).flatMap((r) => (r.operation !== "count-tokens" && r.body ? [r.body] : []));

  beforeAll(async () => {
    await channel.ask("analyst", "which customers drove the discounts last month?");
    await channel.ask("analyst", "list every order line of last month");
    const conversationId = await channel.conversationId();
    const artifact = await t.db.collection("artifacts").findOne({ conversationId, kind: "artifact", toolName: "sql_query", tokens: { $gt: 2_000 } });
    stolenHandle = String(artifact?._id);
    before = converse.requests.length;
    await channel.ask("viewer", "what did the analysis above find?");
  }, 120_000);

  it("A's turns fetched the gated rows (the premise)", async () => {
    const conversationId = await channel.conversationId();
    const artifacts = await t.db.collection("artifacts").find({ conversationId, toolName: "sql_query" }).toArray();
    expect(artifacts.map((a) => a.content ?? "").join("\n")).toContain("Cobalt Ridge Hospitals");
    expect(stolenHandle).toMatch(/^art_/);
  });

  it("B's Converse request carries none of A's rows nor A's artifact handle, and says output is withheld", () => {
    const [first] = viewerRequests();
    const text = requestText(first);
    expect(lastUserText(first)).toContain("what did the analysis above find?");
    // A's questions and posted answers stay: they were posted in the thread.
    expect(text).toContain("which customers drove the discounts last month?");
    expectNoGatedRows(text);
    expect(text).not.toContain(stolenHandle);
    expect(text).not.toContain("2026-10");
    expect(text).toContain("[Withheld: what sql_query was asked and returned is hidden from you because it needs the role analyst");
  });

  it("refuses B's read_tool_output on A's artifact handle, saying why", async () => {
    await channel.ask("viewer", "open the big output please");
    const answer = viewerRequests().find((r) => toolResultText(r)?.includes(stolenHandle));
    const result = toolResultText(answer as ConverseRequest) ?? "";
    expectNoGatedRows(result);
    expect(result).toMatch(/not permitted to read the output of sql_query|Withheld/);
  });

  it("after 6 filler turns, search_conversation returns none of A's rows and says outputs were withheld", async () => {
    for (let i = 1; i <= 6; i++) await channel.ask("viewer", `filler question number ${i}`);
    await channel.ask("viewer", "search the thread for the discount customers");
    const searched = viewerRequests().filter((r) => toolResultText(r)?.includes("earlier turn") || toolResultText(r)?.includes("Withheld"));
    const result = toolResultText(searched.at(-1) as ConverseRequest) ?? "";
    expect(result.length).toBeGreaterThan(0);
    expectNoGatedRows(result);
    expect(result).toContain("[Withheld:");
    // Nor does any request of B's, the ledger of time anchors in its system part included.
    for (const request of viewerRequests()) expectNoGatedRows(requestText(request));
    const system = (viewerRequests().at(-1)?.system ?? []).map((b) => ("text" in b ? b.text : "")).join("\n");
    expect(system).not.toContain("month = '2026-10'");
    expect(system).toContain("[withheld: a period set by a query whose output is hidden from you]");
  });

  it("the records of B's model calls (model_calls) hold none of A's rows", async () => {
    const conversationId = await channel.conversationId();
    const viewerTurns = await t.db.collection("turns").find({ conversationId, "askedBy.subject": channel.viewer.principal.subject }).toArray();
    const calls = await t.db
      .collection<ModelCallRecord>("model_calls")
      .find({ turnId: { $in: viewerTurns.map((turn) => String(turn._id)) } })
      .toArray();
    expect(calls.length).toBeGreaterThan(0);
    expectNoGatedRows(JSON.stringify(calls.map((c) => c.view)));
  });

  it("the inspector shows B none of A's model calls' views, only a notice, and A all of them", async () => {
    const conversationId = await channel.conversationId();
    const analystTurns = await t.db
      .collection("turns")
      .find({ conversationId, "askedBy.subject": { $ne: channel.viewer.principal.subject } })
      .toArray();
    const calls = await t.db
      .collection<ModelCallRecord>("model_calls")
      .find({ turnId: { $in: analystTurns.map((turn) => String(turn._id)) } })
      .toArray();
    expect(JSON.stringify(calls.map((c) => c.view))).toContain("Cobalt Ridge Hospitals");
    const seen = callsSeenBy(calls, channel.viewer, analystTurns[0].askedBy);
    expectNoGatedRows(JSON.stringify(seen));
    expect(seen.filter((c) => c.view[0]?.content.includes("[Withheld:")).length).toBeGreaterThan(0);
    const analyst: Caller = { principal: analystTurns[0].askedBy, roles: ["analyst"] };
    expect(JSON.stringify(callsSeenBy(calls, analyst, analystTurns[0].askedBy))).toContain("Cobalt Ridge Hospitals");
  });
});
