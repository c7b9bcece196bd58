import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest } from "../support/slack-signing.js";
import { appMention, BOT_USER, envelope, TEAM } from "../channels/slack/fixtures.js";

const BOT_TOKEN = "xoxb-local-limits-token";

let slackApi: SlackApiEndpoint;
let converse: ConverseEndpoint;
let t: TestServer;

beforeAll(async () => {
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER });
  converse = await startConverseEndpoint({ respond: (request) => ({ text: `answer to: ${lastUserText(request)}` }) });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  // Two turns per minute for each Slack user: the third message of a minute is refused.
  t = await startTestServer(
    { MODEL_PROVIDER: "bedrock", SLACK_API_URL: slackApi.slackApiUrl, LIMIT_USER_TURNS_PER_MINUTE: "2" },
    // The limits' clock stands still, so every message falls in the same minute however slow the machine.
    { channels: { slack: { signingSecret: "limits-signing-secret", botToken: BOT_TOKEN } }, app: { limitsNow: () => new Date("2030-01-01T12:00:30Z") } },
  );
});
afterAll(async () => {
  await t?.close();
  await slackApi?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

let counter = 0;
async function mention(text: string): Promise<string> {
  counter += 1;
  const ts = `1700009${String(counter).padStart(3, "0")}.000100`;
  const body = envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> ${text}` }));
  const response = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body, { secret: "limits-signing-secret" }), body });
  expect(response.status).toBe(200);
  await t.server.turnQueue.drain();
  return ts;
}

describe("local server: Slack over a limit", () => {
  it("tells the user once per window that the limit is reached, and runs none of the refused messages", async () => {
    const threads = [];
    for (let i = 0; i < 5; i++) threads.push(await mention(`question ${i}`));
    const postsIn = (ts: string) => slackApi.posts.filter((p) => p.threadTs === ts).map((p) => p.text);
    expect(postsIn(threads[0])).toEqual(["answer to: question 0"]);
    expect(postsIn(threads[1])).toEqual(["answer to: question 1"]);
    expect(postsIn(threads[2])).toEqual([expect.stringMatching(/faster than I may answer/)]);
    // The same window: refused in silence.
    expect(postsIn(threads[3])).toEqual([]);
    expect(postsIn(threads[4])).toEqual([]);
    expect(converse.requests.filter((r) => r.body && lastUserText(r.body).startsWith("question")).length).toBe(2);
    const failed = await t.db.collection("turns").find({ status: "failed" }).toArray();
    expect(failed.map((turn) => turn.error.code)).toEqual(["rate_limited", "rate_limited", "rate_limited"]);
  });
});
