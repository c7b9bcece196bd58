import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../lib/config/config.js";
import { startLocalServer } from "../../lib/local/local-server.js";
import { explainStartupError } from "../../lib/local/startup-error.js";
import type { StructuredLogger } from "../../lib/logger.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../support/converse-endpoint.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest } from "../support/slack-signing.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { appMention, BOT_USER, envelope, TEAM } from "../channels/slack/fixtures.js";
import { messageActivity } from "../channels/teams/fixtures.js";

/**
 * The README's rule (Security): secrets never reach logs, and message contents are not logged.
 * Every flow below carries a canary; every line the product logs is captured and searched for all of them.
 */
const CANARY = {
  question: "CANARYquestion7f3a",
  toolRow: "CANARYtoolrow91b2",
  toolError: "CANARYtoolerror5c8d",
  modelError: "CANARYmodelerror0e41",
  editedArgs: "CANARYeditedargs6d27",
  slackText: "CANARYslacktext3a90",
  teamsText: "CANARYteamstext8b15",
  badInput: "CANARYbadinput2f66",
  slackSigningSecret: "CANARYslacksigningsecret4e7c",
  slackBotToken: "xoxb-CANARYslackbottoken1d58",
  teamsAppPassword: "CANARYteamsapppassword77a0",
  mongoPassword: "CANARYmongopassword39e1",
  forgedJwt: "CANARYforgedjwt5b3c",
};

const POLICY = { create_follow_up: { require: "always", approvers: { roles: ["manager"] } } };

/** Every log line, as text: the app's structured logger and the console the local server also logs to. */
const lines: string[] = [];
const capture = (level: string) => (message: string, fields: Record<string, unknown>) => void lines.push(JSON.stringify({ level, message, ...fields }));
const capturingLogger: StructuredLogger = { info: capture("info"), warn: capture("warn"), error: capture("error") };

/** The scripted model: `tool {json}` calls that tool; a tool result is echoed back; "refused" is refused with the text in Bedrock's error. */
function respond(request: ConverseRequest): ScriptedReply {
  const last = request.messages[request.messages.length - 1];
  const results = last.content.flatMap((b) => ("toolResult" in b ? b.toolResult.content.map((c) => ("text" in c ? c.text : JSON.stringify(c.json))) : []));
  if (results.length > 0) return { text: `the tool said: ${results.join("\n")}` };
  const text = lastUserText(request);
  const call = /^(\w+) (\{.*\})$/s.exec(text.trim());
  if (call) return { toolUses: [{ name: call[1], input: JSON.parse(call[2]) }] };
  if (text.includes("refused")) return { error: { status: 400, type: "ValidationException", message: `The model rejected: ${text}` } };
  return { text: `answer to: ${text}` };
}

let converse: ConverseEndpoint;
let slackApi: SlackApiEndpoint;
let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let t: TestServer;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  slackApi = await startSlackApiEndpoint({ botToken: CANARY.slackBotToken, teamId: TEAM, botUserId: BOT_USER });
  issuer = await startBotFrameworkIssuer();
  connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: CANARY.teamsAppPassword });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
  }
  t = await startTestServer(
    {
      MODEL_PROVIDER: "bedrock",
      TOOL_APPROVALS: JSON.stringify(POLICY),
      SLACK_API_URL: slackApi.slackApiUrl,
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
    },
    {
      app: { logger: capturingLogger },
      channels: {
        slack: { signingSecret: CANARY.slackSigningSecret, botToken: CANARY.slackBotToken },
        teams: { appId: TEST_APP_ID, appPassword: CANARY.teamsAppPassword },
      },
    },
  );
});

afterAll(async () => {
  await t?.close();
  await connector?.close();
  await issuer?.close();
  await slackApi?.close();
  await converse?.close();
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

/** The canaries (by name) that some captured line contains, with the first such line. */
function leaks(extra: Record<string, string> = {}, from = 0): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [name, canary] of Object.entries({ ...CANARY, ...extra })) {
    const line = lines.slice(from).find((l) => l.includes(canary));
    if (line) found[name] = line;
  }
  return found;
}

async function ask(token: string, content: string) {
  const id = (await t.call("POST", "/v1/conversations", { token })).body.conversationId as string;
  const asked = await t.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content } });
  return { id, asked };
}

describe("log hygiene", () => {
  it("logs no canary from questions, tool rows and errors, model answers and errors, edited arguments, Slack and Teams texts, or secrets", async () => {
    const alice = await t.token("alice");
    const manager = await t.token("alice", { roles: ["manager"] });

    // A question and the model's answer, which echoes it.
    expect((await ask(alice, `what about ${CANARY.question}?`)).asked.body.answer).toContain(CANARY.question);
    // A tool's output (a row holding the canary), which the model's answer quotes.
    const row = await ask(alice, `sql_query {"sql": "SELECT '${CANARY.toolRow}' AS code"}`);
    expect(row.asked.body.answer).toContain(CANARY.toolRow);
    // A tool error: a refused write, and a query naming a table that does not exist.
    expect((await ask(alice, `sql_query {"sql": "DELETE FROM orders WHERE note = '${CANARY.toolError}'"}`)).asked.body.status).toBe("completed");
    expect((await ask(alice, `sql_query {"sql": "SELECT * FROM ${CANARY.toolError}"}`)).asked.body.answer).toContain(CANARY.toolError);
    // A model error whose message carries the question.
    expect((await ask(alice, `refused ${CANARY.modelError}`)).asked.status).toBeGreaterThanOrEqual(400);
    // Edited approval arguments, run by the worker.
    const waiting = await ask(alice, `create_follow_up {"title": "Call the supplier"}`);
    expect(waiting.asked.body.status).toBe("awaiting_approval");
    const approvalId = waiting.asked.body.approvals[0].approvalId as string;
    const edited = await t.call("POST", `/v1/conversations/${waiting.id}/approvals/${approvalId}`, {
      token: manager,
      json: { decision: "edit", args: { title: `Call ${CANARY.editedArgs}` } },
    });
    expect(edited.status).toBe(200);
    // Bad input: unknown fields, a body that is no JSON, a forged bearer token.
    expect((await t.call("POST", `/v1/conversations/${waiting.id}/messages`, { token: alice, json: { content: "x", [CANARY.badInput]: 1 } })).status).toBe(400);
    expect(
      (
        await t.call("POST", `/v1/conversations/${waiting.id}/messages`, {
          token: alice,
          headers: { "content-type": "application/json" },
          body: `{"content": "${CANARY.badInput}`,
        })
      ).status,
    ).toBe(400);
    const forged = `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify({ sub: CANARY.forgedJwt })).toString("base64url")}.${CANARY.forgedJwt}`;
    expect((await t.call("GET", "/v1/conversations", { token: forged })).status).toBe(401);

    // Slack: a signed mention, and one signed with another secret.
    const body = envelope(appMention({ ts: "1700009001.000100", event_ts: "1700009001.000100", text: `<@${BOT_USER}> ${CANARY.slackText}` }));
    const slack = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body, { secret: CANARY.slackSigningSecret }), body });
    expect(slack.status).toBe(200);
    const unsigned = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body, { secret: "another" }), body });
    expect(unsigned.status).toBe(401);
    // Teams: a signed personal-chat message.
    const activity = messageActivity(connector.serviceUrl, { text: CANARY.teamsText });
    const teams = await fetch(`${t.url}/teams/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${await issuer.sign({ serviceUrl: connector.serviceUrl })}` },
      body: JSON.stringify(activity),
    });
    expect(teams.status).toBe(202);
    await t.server.turnQueue.drain();
    expect(slackApi.posts.map((p) => p.text).join("\n")).toContain(CANARY.slackText);
    expect(connector.replies.map((r) => JSON.stringify(r)).join("\n")).toContain(CANARY.teamsText);

    // The capture saw the flows (else an empty log would pass).
    const messages = lines.map((l) => (l.startsWith("{") ? (JSON.parse(l) as { message?: string }).message : l));
    expect(messages).toEqual(expect.arrayContaining(["tool call finished", "model call", "slack event", "teams activity", "turn job"]));
    expect(leaks({ apiToken: alice, managerToken: manager })).toEqual({});
  });

  it("names a MongoDB URI's hosts, never its password, when the server cannot reach it at start-up", async () => {
    const from = lines.length;
    const uri = `mongodb://threadwise:${CANARY.mongoPassword}@127.0.0.1:9/?directConnection=true`;
    const config = loadConfig({ MONGODB_URI: uri, MONGODB_DB: "hygiene", MONGODB_SERVER_SELECTION_TIMEOUT_MS: "200" });
    const error = await startLocalServer(config, {
      port: 0,
      localDir: await mkdtemp(join(tmpdir(), "threadwise-keys-")),
      app: { logger: capturingLogger },
    }).catch((e: unknown) => e);
    const explained = explainStartupError(error, { mongodbUri: uri, serverSelectionTimeoutMs: 200 });
    expect(explained).toContain("127.0.0.1:9");
    expect(explained).not.toContain(CANARY.mongoPassword);
    expect(leaks({}, from)).toEqual({});
  });
});
