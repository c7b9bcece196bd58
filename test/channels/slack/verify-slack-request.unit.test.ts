import fc from "fast-check";
import { ChannelAuthenticationError } from "../../../lib/errors.js";
import { DEFAULT_SLACK_MAX_SKEW_SECONDS, verifySlackRequest } from "../../../lib/channels/index.js";
import { decodeEventBody } from "../../../lib/api/index.js";
import { TEST_SLACK_SIGNING_SECRET, signSlackRequest } from "../../support/slack-signing.js";
import { appMention, envelope } from "./fixtures.js";

const NOW = new Date("2026-03-01T12:00:00Z");

function reasonOf(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (error instanceof ChannelAuthenticationError) return error.reason;
    throw error;
  }
}

describe("slack/verify-slack-request", () => {
  describe("verifySlackRequest", () => {
    it("returns for a request signed as Slack signs it", () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: NOW });
      expect(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW })).not.toThrow();
    });

    it("returns for a body API Gateway delivered base64-encoded, once decoded", () => {
      const rawBody = envelope(appMention({ text: "<@U0BOT> café ☕ – naïve?" }));
      const headers = signSlackRequest(rawBody, { at: NOW });
      const decoded = decodeEventBody({ body: Buffer.from(rawBody, "utf8").toString("base64"), isBase64Encoded: true }) ?? "";
      expect(() => verifySlackRequest({ headers, rawBody: decoded, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW })).not.toThrow();
    });

    it("throws missing when the signature header is absent", () => {
      const rawBody = envelope(appMention());
      const { "x-slack-signature": _, ...headers } = signSlackRequest(rawBody, { at: NOW });
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("missing");
    });

    it("throws missing when the timestamp header is absent", () => {
      const rawBody = envelope(appMention());
      const { "x-slack-request-timestamp": _, ...headers } = signSlackRequest(rawBody, { at: NOW });
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("missing");
    });

    it("throws malformed when the timestamp is not a number", () => {
      const rawBody = envelope(appMention());
      const headers = { ...signSlackRequest(rawBody, { at: NOW }), "x-slack-request-timestamp": "soon" };
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("malformed");
    });

    it.each([
      ["trailing characters", (seconds: number) => `${seconds}x`],
      ["leading characters", (seconds: number) => `x${seconds}`],
      ["a fraction", (seconds: number) => `${seconds}.5`],
      ["a sign", (seconds: number) => `+${seconds}`],
      ["thirteen digits", (seconds: number) => `${seconds}000`],
    ])("throws malformed for a correctly signed timestamp with %s, which must not skip the replay window", (_, timestamp) => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { timestamp: timestamp(Math.floor(NOW.getTime() / 1000)) });
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("malformed");
    });

    it("returns for a request signed exactly at the edge of the window, and throws expired one second past it", () => {
      const rawBody = envelope(appMention());
      const at = (secondsAgo: number) => signSlackRequest(rawBody, { at: new Date(NOW.getTime() - secondsAgo * 1000) });
      const check = (headers: Record<string, string>) => () => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW });
      expect(check(at(DEFAULT_SLACK_MAX_SKEW_SECONDS))).not.toThrow();
      expect(reasonOf(check(at(DEFAULT_SLACK_MAX_SKEW_SECONDS + 1)))).toBe("expired");
      expect(check(at(-DEFAULT_SLACK_MAX_SKEW_SECONDS))).not.toThrow();
      expect(reasonOf(check(at(-DEFAULT_SLACK_MAX_SKEW_SECONDS - 1)))).toBe("expired");
    });

    it("throws expired outside a window narrower than the default, when one is given", () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: new Date(NOW.getTime() - 60_000) });
      const verify = (maxSkewSeconds: number) => () =>
        verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW, maxSkewSeconds });
      expect(reasonOf(verify(59))).toBe("expired");
      expect(verify(60)).not.toThrow();
    });

    it("measures the window from the current time when none is given", () => {
      const rawBody = envelope(appMention());
      const fresh = signSlackRequest(rawBody);
      expect(() => verifySlackRequest({ headers: fresh, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET })).not.toThrow();
      const stale = signSlackRequest(rawBody, { at: new Date(Date.now() - (DEFAULT_SLACK_MAX_SKEW_SECONDS + 60) * 1000) });
      expect(reasonOf(() => verifySlackRequest({ headers: stale, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET }))).toBe("expired");
    });

    it.each([
      ["missing", { "x-slack-signature": undefined }, "slack signature headers missing"],
      ["malformed", { "x-slack-request-timestamp": "soon" }, "slack request timestamp malformed"],
      ["expired", { "x-slack-request-timestamp": "1000000000" }, "slack request timestamp outside the window"],
      ["bad_signature", { "x-slack-signature": "v0=abc" }, "slack signature does not match"],
    ])("throws %s with a message that says which check failed, for the logs", (reason, change, message) => {
      const rawBody = envelope(appMention());
      const headers = { ...signSlackRequest(rawBody, { at: NOW }), ...change };
      const verify = () => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW });
      expect(verify).toThrow(message);
      expect(reasonOf(verify)).toBe(reason);
    });

    it("throws bad_signature when the body was changed after signing", () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: NOW });
      const tampered = rawBody.replace("last month", "every month");
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody: tampered, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("bad_signature");
    });

    it("throws bad_signature when signed with another secret", () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: NOW, secret: "not-the-apps-secret" });
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("bad_signature");
    });

    it("throws bad_signature, not a RangeError, for a signature of another length", () => {
      const rawBody = envelope(appMention());
      const headers = { ...signSlackRequest(rawBody, { at: NOW }), "x-slack-signature": "v0=abc" };
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("bad_signature");
    });

    it("throws bad_signature when the timestamp header was changed after signing", () => {
      const rawBody = envelope(appMention());
      const signed = signSlackRequest(rawBody, { at: NOW });
      const headers = { ...signed, "x-slack-request-timestamp": String(Number(signed["x-slack-request-timestamp"]) + 1) };
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("bad_signature");
    });

    it("throws expired when the request was signed more than five minutes ago", () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: new Date(NOW.getTime() - 5 * 60_000 - 1_000) });
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("expired");
    });

    it("throws expired when the timestamp is more than five minutes ahead", () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: new Date(NOW.getTime() + 6 * 60_000) });
      expect(reasonOf(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("expired");
    });

    it("returns for a request signed four minutes ago", () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: new Date(NOW.getTime() - 4 * 60_000) });
      expect(() => verifySlackRequest({ headers, rawBody, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW })).not.toThrow();
    });

    it("throws bad_signature for any single changed character of any body", () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1, maxLength: 200 }), fc.nat(), fc.integer({ min: 1, max: 0xffff }), (body, at, delta) => {
          const headers = signSlackRequest(body, { at: NOW });
          const i = at % body.length;
          const changed = body.slice(0, i) + String.fromCharCode((body.charCodeAt(i) + delta) % 0x10000) + body.slice(i + 1);
          fc.pre(Buffer.from(changed, "utf8").compare(Buffer.from(body, "utf8")) !== 0);
          verifySlackRequest({ headers, rawBody: body, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW });
          expect(reasonOf(() => verifySlackRequest({ headers, rawBody: changed, signingSecret: TEST_SLACK_SIGNING_SECRET, now: NOW }))).toBe("bad_signature");
        }),
        { numRuns: 200 },
      );
    });
  });
});
