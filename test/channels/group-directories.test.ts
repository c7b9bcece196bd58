import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { slackPrincipal } from "../../lib/auth/principal.js";
import { createGroupDirectories } from "../../lib/channels/group-directories.js";
import { SlackGroupDirectory } from "../../lib/channels/slack/slack-group-directory.js";
import { EntraGroupDirectory } from "../../lib/channels/teams/entra-group-directory.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";

const BOT_TOKEN = "xoxb-group-directories-test";
const TEAM = "T0DIRS";
let slack: SlackApiEndpoint;

beforeAll(async () => {
  slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, userGroups: { S0FIN: ["U0ALICE"] } });
});
afterAll(async () => slack?.close());

describe("createGroupDirectories", () => {
  it("returns no directory when no channel is connected", () => {
    expect(createGroupDirectories({})).toEqual({});
  });

  it("returns a directory for each connected channel only", () => {
    const slackOnly = createGroupDirectories({ slack: { botToken: BOT_TOKEN } });
    expect(Object.keys(slackOnly)).toEqual(["slack"]);
    expect(slackOnly.slack).toBeInstanceOf(SlackGroupDirectory);
    const both = createGroupDirectories({ slack: { botToken: BOT_TOKEN }, teams: { appId: "app", appPassword: "secret" } });
    expect(both.teams).toBeInstanceOf(EntraGroupDirectory);
  });

  it("returns a Slack directory that reads the groups with the bot token at the configured Slack API", async () => {
    const { slack: directory } = createGroupDirectories({ slack: { botToken: BOT_TOKEN } }, { slackApiUrl: slack.slackApiUrl });
    expect(await directory?.memberOf(slackPrincipal(TEAM, "U0ALICE"), ["S0FIN"])).toEqual(["S0FIN"]);
    expect(slack.calls.some((c) => c.method === "usergroups.users.list")).toBe(true);
  });
});
