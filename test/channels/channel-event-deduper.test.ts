import { ChannelEventDeduper } from "../../lib/channels/index.js";
import { useStoreFixture } from "../support/store-fixture.js";

describe("channel-event-deduper", () => {
  const { deduper } = useStoreFixture("dedupe", (db) => ({ deduper: new ChannelEventDeduper(db) })).stores;

  describe("setup", () => {
    it("creates a TTL index on receivedAt, and may run again", async () => {
      await deduper.setup();
      const indexes = await deduper.collection.indexes();
      expect(indexes.find((i) => i.name === "ttl")).toMatchObject({ key: { receivedAt: 1 }, expireAfterSeconds: 86_400 });
    });
  });

  describe("claim", () => {
    it("returns true for the first delivery and false for the retry", async () => {
      expect(await deduper.claim("slack:Ev1")).toBe(true);
      expect(await deduper.claim("slack:Ev1")).toBe(false);
    });

    it("returns true for a different event id", async () => {
      await deduper.claim("slack:Ev1");
      expect(await deduper.claim("slack:Ev2")).toBe(true);
    });

    it("returns true for exactly one of many concurrent deliveries", async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => deduper.claim("teams:conv:act-1")));
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });

  describe("release", () => {
    it("lets the next delivery of a released event claim it again", async () => {
      await deduper.claim("slack:Ev1");
      await deduper.release("slack:Ev1");
      expect(await deduper.claim("slack:Ev1")).toBe(true);
    });
  });
});
