import { slackIdentityOf } from "../../../lib/channels/slack/slack-identity.js";

const HOST = "T0HOST";

describe("slack/slack-identity", () => {
  describe("slackIdentityOf", () => {
    it("returns the host workspace's user outside Slack Connect, whatever user_team says", () => {
      expect(slackIdentityOf({ teamId: HOST, userId: "U1", isExtSharedChannel: false, userTeam: "T0OTHER" })).toEqual({
        kind: "user",
        team: HOST,
        userId: "U1",
        hostTeam: HOST,
        guest: false,
      });
    });

    it("returns a guest of their own team in a shared channel, from user_team, else source_team", () => {
      expect(slackIdentityOf({ teamId: HOST, userId: "U2", isExtSharedChannel: true, userTeam: "T0GUEST", sourceTeam: "T0ELSE" })).toMatchObject({
        team: "T0GUEST",
        guest: true,
      });
      expect(slackIdentityOf({ teamId: HOST, userId: "U2", isExtSharedChannel: true, sourceTeam: "T0ELSE" })).toMatchObject({ team: "T0ELSE", guest: true });
      expect(slackIdentityOf({ teamId: HOST, userId: "U3", isExtSharedChannel: true, userTeam: HOST })).toMatchObject({ team: HOST, guest: false });
    });

    it("refuses a shared channel's message that names no well-formed team of its user", () => {
      for (const userTeam of [undefined, "", "t0lower", "T0 X", 42]) {
        expect(slackIdentityOf({ teamId: HOST, userId: "U4", isExtSharedChannel: true, userTeam })).toEqual({ kind: "refused", reason: "unknown_team" });
      }
    });
  });
});
