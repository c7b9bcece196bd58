import { mongodbUriUsesTls, parseCredentials } from "../../lib/config/credentials.js";
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
});
