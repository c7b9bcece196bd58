import { decodeGatewayBody, lowercaseHeaders } from "../../lib/channels/index.js";

describe("channel-http", () => {
  describe("decodeGatewayBody", () => {
    it("returns the exact UTF-8 text of a base64-encoded body", () => {
      const text = '{"text":"café ☕ \\u00e9 😀"}';
      expect(decodeGatewayBody({ body: Buffer.from(text, "utf8").toString("base64"), isBase64Encoded: true })).toBe(text);
    });

    it("returns a plain body unchanged", () => {
      expect(decodeGatewayBody({ body: "payload=%7B%7D", isBase64Encoded: false })).toBe("payload=%7B%7D");
    });

    it("returns an empty string for a missing body", () => {
      expect(decodeGatewayBody({ body: null, isBase64Encoded: true })).toBe("");
    });
  });

  describe("lowercaseHeaders", () => {
    it("returns header names lowercased and multi-value headers joined", () => {
      expect(lowercaseHeaders({ "X-Slack-Signature": "v0=a", Accept: ["a", "b"] })).toEqual({ "x-slack-signature": "v0=a", accept: "a, b" });
    });
  });
});
