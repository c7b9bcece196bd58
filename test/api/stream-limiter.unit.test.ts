import { RateLimitedError } from "../../lib/errors.js";
import { DEFAULT_STREAMS_PER_PRINCIPAL, DEFAULT_STREAM_RETRY_AFTER_SECONDS, StreamLimiter } from "../../lib/api/stream-limiter.js";

describe("StreamLimiter", () => {
  describe("acquire", () => {
    it("returns a stream up to the cap per principal, then throws RateLimitedError with Retry-After, leaving others unaffected", () => {
      const limiter = new StreamLimiter();
      for (let i = 0; i < DEFAULT_STREAMS_PER_PRINCIPAL; i++) limiter.acquire("alice");
      const refused = (() => {
        try {
          limiter.acquire("alice");
        } catch (error) {
          return error;
        }
      })();
      expect(refused).toBeInstanceOf(RateLimitedError);
      expect(refused).toMatchObject({ limit: "streams_per_principal", retryAfterSeconds: DEFAULT_STREAM_RETRY_AFTER_SECONDS });
      expect(() => limiter.acquire("bob")).not.toThrow();
      expect(limiter.held("alice")).toBe(DEFAULT_STREAMS_PER_PRINCIPAL);
    });

    it("returns a release that gives the stream back once, however often it is called", () => {
      const limiter = new StreamLimiter({ perPrincipal: 2 });
      const first = limiter.acquire("alice");
      limiter.acquire("alice");
      first();
      first();
      expect(limiter.held("alice")).toBe(1);
      expect(() => limiter.acquire("alice")).not.toThrow();
      expect(() => limiter.acquire("alice")).toThrow(RateLimitedError);
    });
  });
});
