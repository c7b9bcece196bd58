import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { slackPrincipal } from "../../../lib/auth/principal.js";
import { SlackGroupDirectory } from "../../../lib/channels/slack/slack-group-directory.js";
import { slackWebClient } from "../../../lib/channels/slack/slack-replier.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../../support/slack-api-endpoint.js";

const BOT_TOKEN = "xoxb-group-directory-test";
const TEAM = "T0GROUPS";
let slack: SlackApiEndpoint;

beforeAll(async () => {
  slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, userGroups: { S0FIN: ["U0ALICE", "U0BOB"], S0OPS: ["U0BOB"] } });
});
afterAll(async () => slack?.close());

const listCalls = () => slack.calls.filter((c) => c.method === "usergroups.users.list").length;

function directoryAt(clock: { now: number }, cacheMs = 60_000) {
  const client = slackWebClient({ botToken: BOT_TOKEN, slackApiUrl: slack.slackApiUrl, retries: 0 });
  return new SlackGroupDirectory(client, { cacheMs, now: () => clock.now });
}

describe("channels/slack/slack-group-directory", () => {
  describe("memberOf", () => {
    it("returns the configured groups the user is a member of, from usergroups.users.list", async () => {
      const directory = directoryAt({ now: 0 });
      expect(await directory.memberOf(slackPrincipal(TEAM, "U0BOB"), ["S0FIN", "S0OPS"])).toEqual(["S0FIN", "S0OPS"]);
      expect(await directory.memberOf(slackPrincipal(TEAM, "U0ALICE"), ["S0FIN", "S0OPS"])).toEqual(["S0FIN"]);
      expect(await directory.memberOf(slackPrincipal(TEAM, "U0CAROL"), ["S0FIN", "S0OPS"])).toEqual([]);
    });

    it("reads each group once while its members are fresh, and again after they expire", async () => {
      const clock = { now: 1_000 };
      const directory = directoryAt(clock);
      const before = listCalls();
      await directory.memberOf(slackPrincipal(TEAM, "U0ALICE"), ["S0FIN"]);
      await directory.memberOf(slackPrincipal(TEAM, "U0BOB"), ["S0FIN"]);
      expect(listCalls() - before).toBe(1);
      clock.now += 60_000;
      await directory.memberOf(slackPrincipal(TEAM, "U0BOB"), ["S0FIN"]);
      expect(listCalls() - before).toBe(2);
    });

    it("throws when Slack refuses the call, and asks again next time instead of caching the failure", async () => {
      const directory = directoryAt({ now: 0 });
      slack.failNextGroupList("missing_scope");
      await expect(directory.memberOf(slackPrincipal(TEAM, "U0ALICE"), ["S0FIN"])).rejects.toThrow(/missing_scope/);
      expect(await directory.memberOf(slackPrincipal(TEAM, "U0ALICE"), ["S0FIN"])).toEqual(["S0FIN"]);
    });

    it("throws for a group Slack does not know, rather than treat it as empty", async () => {
      await expect(directoryAt({ now: 0 }).memberOf(slackPrincipal(TEAM, "U0ALICE"), ["S0TYPO"])).rejects.toThrow(/no_such_subteam/);
    });
  });
});
