import { channelCredentialsFromEnv, channelCredentialsOf, mongodbUriUsesTls, parseCredentials } from "../../lib/config/credentials.js";
import { ValidationError } from "../../lib/errors.js";

describe("credentials", () => {
  describe("mongodbUriUsesTls", () => {
    it.each([
      ["mongodb+srv://u:p@cluster0.example.mongodb.net/?retryWrites=true", true],
      ["mongodb+srv://u:p@cluster0.example.mongodb.net/?tls=false", false],
      ["mongodb://h1:27017,h2:27017/?replicaSet=rs0&tls=true", true],
      ["mongodb://h1:27017/?ssl=true", true],
      ["mongodb://127.0.0.1:27017/", false],
    ])("returns %s → %s", (uri, expected) => {
      expect(mongodbUriUsesTls(uri)).toBe(expected);
    });
  });

  describe("parseCredentials", () => {
    it("returns the credentials of a valid secret", () => {
      const value = { mongodbUri: "mongodb+srv://u:p@c.example.net/", slackBotToken: "xoxb-1" };
      expect(parseCredentials(value, { requireTls: true })).toEqual(value);
    });

    it("returns the Power BI keys and other string keys, for tools that read secrets by name", () => {
      const parsed = parseCredentials(
        { mongodbUri: "mongodb+srv://u:p@c.example.net/", powerBiClientId: "app", powerBiClientSecret: "s3cr3t", customSecret: "x" },
        { requireTls: true },
      );
      expect(parsed.powerBiClientId).toBe("app");
      expect(parsed.powerBiClientSecret).toBe("s3cr3t");
      expect((parsed as Record<string, unknown>).customSecret).toBe("x");
    });

    it("throws when a key holds something other than a string", () => {
      expect(() => parseCredentials({ mongodbUri: "mongodb+srv://u:p@c.example.net/", powerBiClientId: 42 }, { requireTls: true })).toThrow(ValidationError);
    });

    it("throws when TLS is required and the URI does not use it", () => {
      expect(() => parseCredentials({ mongodbUri: "mongodb://10.0.0.1:27017/" }, { requireTls: true })).toThrow(ValidationError);
    });

    it("throws without echoing the secret's values", () => {
      try {
        parseCredentials({ mongodbUri: "postgres://user:hunter2@db/" }, { requireTls: false });
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect(JSON.stringify({ message: (error as ValidationError).message, details: (error as ValidationError).details })).not.toContain("hunter2");
      }
    });
  });

  describe("channelCredentialsOf", () => {
    it("returns both channels when both are complete", () => {
      const secret = parseCredentials(
        { mongodbUri: "mongodb://x", slackSigningSecret: "s", slackBotToken: "xoxb-1", teamsAppId: "app", teamsAppPassword: "pw", teamsTenantId: "tenant" },
        { requireTls: false },
      );
      expect(channelCredentialsOf(secret)).toEqual({
        slack: { signingSecret: "s", botToken: "xoxb-1" },
        teams: { appId: "app", appPassword: "pw", tenantId: "tenant" },
      });
    });

    it("returns no channel when none is configured", () => {
      expect(channelCredentialsOf({})).toEqual({});
    });

    it("throws ValidationError naming the missing key of a half-configured channel", () => {
      try {
        channelCredentialsOf({ teamsAppId: "app" });
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).details).toEqual([{ path: "teamsAppPassword", message: expect.any(String) }]);
      }
    });
  });

  describe("channelCredentialsFromEnv", () => {
    it("returns the channels set by environment variables, empty ones left off", () => {
      const env = { SLACK_SIGNING_SECRET: "s", SLACK_BOT_TOKEN: "xoxb-1", TEAMS_APP_ID: "", TEAMS_APP_PASSWORD: "" };
      expect(channelCredentialsFromEnv(env)).toEqual({ slack: { signingSecret: "s", botToken: "xoxb-1" } });
    });

    it("throws ValidationError naming the variable, not the value, for a token that is not a bot token", () => {
      try {
        channelCredentialsFromEnv({ SLACK_SIGNING_SECRET: "s", SLACK_BOT_TOKEN: "xoxp-user-secret" });
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).details).toEqual([{ path: "SLACK_BOT_TOKEN", message: expect.any(String) }]);
        expect(JSON.stringify((error as ValidationError).details)).not.toContain("xoxp-user-secret");
      }
    });

    it("throws ValidationError naming the missing variable of a half-configured channel", () => {
      expect(() => channelCredentialsFromEnv({ TEAMS_APP_ID: "app" })).toThrow(
        expect.objectContaining({ details: [{ path: "TEAMS_APP_PASSWORD", message: expect.any(String) }] }),
      );
    });
  });
});
