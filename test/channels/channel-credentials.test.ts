import { ValidationError } from "../../lib/errors.js";
import { parseChannelCredentials } from "../../lib/channels/index.js";

describe("channel-credentials", () => {
  describe("parseChannelCredentials", () => {
    it("returns both channels when both are complete, ignoring other fields", () => {
      const secret = {
        mongodbUri: "mongodb+srv://x",
        slackSigningSecret: "s",
        slackBotToken: "xoxb-1",
        teamsAppId: "app",
        teamsAppPassword: "pw",
        teamsAppTenantId: "tenant",
      };
      expect(parseChannelCredentials(secret)).toEqual({
        slack: { signingSecret: "s", botToken: "xoxb-1" },
        teams: { appId: "app", appPassword: "pw", tenant: "tenant" },
      });
    });

    it("returns no channel when none is configured", () => {
      expect(parseChannelCredentials({ mongodbUri: "mongodb://x" })).toEqual({});
    });

    it("throws ValidationError naming the missing field of a half-configured channel", () => {
      try {
        parseChannelCredentials({ teamsAppId: "app" });
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).details).toEqual([{ path: "teamsAppPassword", message: expect.any(String) }]);
      }
    });

    it("throws ValidationError for a Slack token that is not a bot token", () => {
      expect(() => parseChannelCredentials({ slackSigningSecret: "s", slackBotToken: "xoxp-user-token" })).toThrow(ValidationError);
    });
  });
});
