import { errorResponse } from "../../lib/api/error-response.js";
import {
  CHANNEL_CREDENTIAL_ENV,
  CREDENTIAL_SECRET_NAMES,
  CredentialsMissingError,
  channelCredentialsFromEnv,
  channelCredentialsOf,
  channelIngressCredentialsOf,
  channelReplyCredentialsOf,
  mongodbUriUsesTls,
  parseCredentials,
  requireCredentials,
  secretTemplate,
} from "../../lib/config/credentials.js";
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
    it("returns the keys of every secret merged", () => {
      const parsed = parseCredentials(
        { database: { mongodbUri: "mongodb+srv://u:p@c.example.net/" }, channelReplies: { slackBotToken: "xoxb-1", teamsAppPassword: "" } },
        { requireTls: true },
      );
      expect(parsed).toEqual({ mongodbUri: "mongodb+srv://u:p@c.example.net/", slackBotToken: "xoxb-1" });
    });

    it("returns empty keys as unset, as in a secret created from its template", () => {
      const templates = Object.fromEntries(CREDENTIAL_SECRET_NAMES.map((name) => [name, secretTemplate(name)]));
      expect(parseCredentials(templates, { requireTls: true })).toEqual({});
    });

    it("returns the Power BI keys and other string keys, for tools that read secrets by name", () => {
      const parsed = parseCredentials({ powerBi: { powerBiClientId: "app", powerBiClientSecret: "s3cr3t", customSecret: "x" } }, { requireTls: true });
      expect(parsed.powerBiClientId).toBe("app");
      expect(parsed.powerBiClientSecret).toBe("s3cr3t");
      expect((parsed as Record<string, unknown>).customSecret).toBe("x");
    });

    it("throws naming the secret when a key is in a secret other than its own", () => {
      expect(() => parseCredentials({ database: { mongodbUri: "mongodb+srv://c.example.net/", slackSigningSecret: "s" } }, { requireTls: true })).toThrow(
        expect.objectContaining({ details: [{ path: "database.slackSigningSecret", message: "belongs in the slack-signing secret" }] }),
      );
    });

    it("throws naming the secret when a secret is not a JSON object", () => {
      expect(() => parseCredentials({ database: "mongodb+srv://c.example.net/" }, { requireTls: true })).toThrow(
        expect.objectContaining({ details: [{ path: "database", message: "not a JSON object" }] }),
      );
    });

    it("throws when a key holds something other than a string", () => {
      expect(() => parseCredentials({ powerBi: { powerBiClientId: 42 } }, { requireTls: true })).toThrow(ValidationError);
    });

    it("throws when TLS is required and the URI does not use it", () => {
      expect(() => parseCredentials({ database: { mongodbUri: "mongodb://10.0.0.1:27017/" } }, { requireTls: true })).toThrow(ValidationError);
    });

    it("throws without echoing the secret's values", () => {
      try {
        parseCredentials({ database: { mongodbUri: "postgres://user:hunter2@db/" } }, { requireTls: false });
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect(JSON.stringify({ message: (error as ValidationError).message, details: (error as ValidationError).details })).not.toContain("hunter2");
      }
    });
  });

  describe("secretTemplate", () => {
    it("returns every key of the secret, empty", () => {
      expect(secretTemplate("teamsBot")).toEqual({ teamsAppId: "", teamsTenantId: "" });
    });

    it("returns each key in exactly one secret", () => {
      const keys = CREDENTIAL_SECRET_NAMES.flatMap((name) => Object.keys(secretTemplate(name)));
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys.sort()).toEqual([...Object.keys(CHANNEL_CREDENTIAL_ENV), "mongodbUri", "powerBiClientId", "powerBiClientSecret"].sort());
    });
  });

  describe("requireCredentials", () => {
    it("returns the values of the keys asked for", () => {
      expect(requireCredentials({ mongodbUri: "mongodb://x", slackBotToken: "xoxb-1" }, ["mongodbUri"])).toEqual({ mongodbUri: "mongodb://x" });
    });

    it("throws CredentialsMissingError naming each empty key and its secret", () => {
      expect(() => requireCredentials({}, ["mongodbUri", "teamsAppPassword"])).toThrow(
        expect.objectContaining({
          name: "CredentialsMissingError",
          missing: [
            { key: "mongodbUri", secret: "database" },
            { key: "teamsAppPassword", secret: "channelReplies" },
          ],
          message: expect.stringContaining("mongodbUri in the database secret"),
        }),
      );
    });

    it("throws an error answered 503, as a deployment not finished", () => {
      expect(() => requireCredentials({}, ["mongodbUri"])).toThrow(CredentialsMissingError);
      expect(errorResponse(new CredentialsMissingError([{ key: "mongodbUri", secret: "database" }])).status).toBe(503);
    });
  });

  describe("channelIngressCredentialsOf", () => {
    it("returns the channels a webhook can verify, each from its one key", () => {
      expect(channelIngressCredentialsOf({ slackSigningSecret: "s", teamsAppId: "app" })).toEqual({ slack: { signingSecret: "s" }, teams: { appId: "app" } });
      expect(channelIngressCredentialsOf({ slackBotToken: "xoxb-1" })).toEqual({});
    });
  });

  describe("channelReplyCredentialsOf", () => {
    it("returns the channels the worker can answer in", () => {
      expect(channelReplyCredentialsOf({ slackBotToken: "xoxb-1", teamsAppId: "app", teamsAppPassword: "pw", teamsTenantId: "t" })).toEqual({
        slack: { botToken: "xoxb-1" },
        teams: { appId: "app", appPassword: "pw", tenantId: "t" },
      });
    });

    it("returns only the named channel's, and for Slack alone ignores a Teams bot's half it does not read", () => {
      const shared = { slackBotToken: "xoxb-1", teamsAppPassword: "pw" };
      expect(channelReplyCredentialsOf(shared, "slack")).toEqual({ slack: { botToken: "xoxb-1" } });
      expect(channelReplyCredentialsOf({ ...shared, teamsAppId: "app" }, "teams")).toEqual({ teams: { appId: "app", appPassword: "pw" } });
      expect(() => channelReplyCredentialsOf(shared, "teams")).toThrow(expect.objectContaining({ missing: [{ key: "teamsAppId", secret: "teamsBot" }] }));
    });

    it("throws CredentialsMissingError naming the missing half of a Teams bot", () => {
      expect(() => channelReplyCredentialsOf({ teamsAppId: "app" })).toThrow(
        expect.objectContaining({ missing: [{ key: "teamsAppPassword", secret: "channelReplies" }] }),
      );
    });
  });

  describe("channelCredentialsOf", () => {
    it("returns both channels when both are complete", () => {
      expect(
        channelCredentialsOf({ slackSigningSecret: "s", slackBotToken: "xoxb-1", teamsAppId: "app", teamsAppPassword: "pw", teamsTenantId: "tenant" }),
      ).toEqual({
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
