import { decodeEventBody, lowercaseHeaders } from "../../lib/api/index.js";

describe("http", () => {
  describe("decodeEventBody", () => {
    it("returns the exact UTF-8 text of a base64-encoded body", () => {
      const text = '{"text":"café ☕ \\u00e9 😀"}';
      expect(decodeEventBody({ body: Buffer.from(text, "utf8").toString("base64"), isBase64Encoded: true })).toBe(text);
    });

    it("returns a plain body unchanged", () => {
      expect(decodeEventBody({ body: "payload=%7B%7D", isBase64Encoded: false })).toBe("payload=%7B%7D");
    });

    it("returns undefined for a missing body", () => {
      expect(decodeEventBody({ body: null, isBase64Encoded: true })).toBeUndefined();
    });
  });

  describe("lowercaseHeaders", () => {
    it("returns header names lowercased and multi-value headers joined", () => {
      expect(lowercaseHeaders({ "X-Slack-Signature": "v0=a", Accept: ["a", "b"] })).toEqual({ "x-slack-signature": "v0=a", accept: "a, b" });
    });
  });
});
