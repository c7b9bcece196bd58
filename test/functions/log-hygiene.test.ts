import { appMention, envelope } from "../channels/slack/fixtures.js";
import { lastUserText } from "../support/converse-endpoint.js";
import { mongoUri } from "../support/mongo.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest } from "../support/slack-signing.js";
import { apiEvent, jwtClaims, lambdaContext, sqsEvent, sqsRecord } from "./support/events.js";
import { startHarness, TEST_TEAMS_APP_ID, type Harness } from "./support/harness.js";

/**
 * The README's rule (Security) for the Lambda handlers, whose Powertools logger writes every line:
 * canaries in questions, model errors, Slack texts and the secrets; none may be in a line.
 */
const CANARY = {
  question: "CANARYlambdaquestion61c0",
  modelError: "CANARYlambdamodelerror2a7e",
  badInput: "CANARYlambdabadinput9f13",
  slackText: "CANARYlambdaslacktext47d5",
  slackSigningSecret: "CANARYlambdasigningsecret08b4",
  slackBotToken: "xoxb-CANARYlambdabottoken5e92",
  invalidBotToken: "CANARYlambdainvalidtoken3c61",
  teamsAppPassword: "CANARYlambdateamspassword7a18",
  mongoPassword: "CANARYlambdamongopassword5d02",
};

const lines: string[] = [];
let h: Harness;
let slackApi: SlackApiEndpoint;

beforeAll(async () => {
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
  }
  slackApi = await startSlackApiEndpoint({ botToken: CANARY.slackBotToken });
  h = await startHarness({
    // Every line at INFO, and the secrets read again at once, so the canary values below are the ones used.
    env: { POWERTOOLS_LOG_LEVEL: "INFO", SECRET_CACHE_MS: "1", SLACK_API_URL: slackApi.slackApiUrl },
    converse: {
      respond: (request) => {
        const text = lastUserText(request);
        if (text.includes("refused")) return { error: { status: 400, type: "ValidationException", message: `The model rejected: ${text}` } };
        return { text: `answer to: ${text}` };
      },
    },
  });
  h.aws.setCredentials({
    mongodbUri: mongoUri(),
    slackSigningSecret: CANARY.slackSigningSecret,
    slackBotToken: CANARY.slackBotToken,
    teamsAppId: TEST_TEAMS_APP_ID,
    teamsAppPassword: CANARY.teamsAppPassword,
  });
});
afterAll(async () => {
  await h?.close();
  await slackApi?.close();
  vi.restoreAllMocks();
});

const alice = jwtClaims("alice", { tenant: "acme" });

async function ask(content: string) {
  const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
  const id = created.json.conversationId as string;
  const messages = { method: "POST", path: `/v1/conversations/${id}/messages`, routeKey: "POST /v1/conversations/{id}/messages", claims: alice };
  return { id, messages, asked: await h.api({ ...messages, body: { content } }) };
}

/** A signed mention through the slack function; returns the queue message it sent. */
async function mention(ts: string, text: string) {
  const before = h.aws.sent.length;
  const body = envelope(appMention({ ts, event_ts: ts, text: `<@U0BOT> ${text}` }));
  const headers = signSlackRequest(body, { secret: CANARY.slackSigningSecret });
  const result = await h.slack(apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, headers }), lambdaContext("slack"));
  expect(result.statusCode).toBe(200);
  return h.aws.sent[before];
}

describe("Lambda handlers' logs", () => {
  it("hold no canary from questions, model errors, bad input, Slack texts or the credentials secrets", async () => {
    const answered = await ask(`what about ${CANARY.question}?`);
    expect(answered.asked.json.answer).toContain(CANARY.question);
    expect((await ask(`refused ${CANARY.modelError}`)).asked.status).toBeGreaterThanOrEqual(400);
    expect((await h.api({ ...answered.messages, body: { content: "x", [CANARY.badInput]: 1 } })).status).toBe(400);

    // A Slack turn through the worker, and one the model refuses (given up, with the user told).
    const answeredInSlack = await mention("1700007000.000100", CANARY.slackText);
    expect(await h.worker(sqsEvent(sqsRecord(answeredInSlack)))).toEqual({ batchItemFailures: [] });
    expect(slackApi.posts.map((p) => p.text).join("\n")).toContain(CANARY.slackText);
    const refusedInSlack = await mention("1700007001.000100", `refused ${CANARY.modelError}`);
    await h.worker(sqsEvent(sqsRecord(refusedInSlack)));

    // A bot token the schema refuses: the worker logs which key is invalid, never its value.
    const invalid = await mention("1700007002.000100", "after the rotation");
    h.aws.setCredentials({ mongodbUri: mongoUri(), slackSigningSecret: CANARY.slackSigningSecret, slackBotToken: CANARY.invalidBotToken });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await h.worker(sqsEvent(sqsRecord(invalid)))).batchItemFailures).toHaveLength(1);

    const text = lines.join("\n");
    for (const message of ["request failed", "slack event", "turn job", "credentials invalid"]) expect(text).toContain(`"${message}"`);
    const found = Object.entries(CANARY).filter(([, canary]) => text.includes(canary));
    expect(found.map(([name]) => [name, lines.find((l) => l.includes(CANARY[name as keyof typeof CANARY]))])).toEqual([]);
  });

  it("hold no MongoDB password, nor does any handler reject with it, when the secret's URI cannot be parsed", async () => {
    const from = lines.length;
    h.aws.setCredentials({ mongodbUri: mongoUri(), slackSigningSecret: CANARY.slackSigningSecret, slackBotToken: CANARY.slackBotToken });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const message = await mention("1700007100.000100", "before the bad URI");
    h.aws.setCredentials({ mongodbUri: `mongodb://admin:${CANARY.mongoPassword}@/threadwise`, slackSigningSecret: CANARY.slackSigningSecret });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const outcomes = [
      await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice }).catch((e: unknown) => e),
      await h.worker(sqsEvent(sqsRecord(message))).catch((e: unknown) => e),
    ];
    expect(outcomes).toMatchObject([{ status: 500 }, { batchItemFailures: [{ itemIdentifier: expect.any(String) }] }]);
    // What a handler rejects with, the Lambda runtime writes to the log: its message must not carry the URI either.
    const text = [...lines.slice(from), ...outcomes.map((o) => (o instanceof Error ? `${o.name}: ${o.message}` : JSON.stringify(o)))].join("\n");
    expect(text).not.toContain(CANARY.mongoPassword);
  });
});
