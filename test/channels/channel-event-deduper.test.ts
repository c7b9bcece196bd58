import { ChannelEventDeduper, DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS } from "../../lib/channels/index.js";
import { useStoreFixture } from "../support/store-fixture.js";

const AT = new Date("2026-12-01T12:00:00.000Z");
const later = (seconds: number) => new Date(AT.getTime() + seconds * 1000);

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
    it("returns claimed for the first delivery and duplicate for a retry once its job is confirmed", async () => {
      expect(await deduper.claim("slack:Ev1", AT)).toBe("claimed");
      await deduper.confirm("slack:Ev1");
      expect(await deduper.claim("slack:Ev1", later(1))).toBe("duplicate");
      expect(await deduper.claim("slack:Ev1", later(DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS + 1))).toBe("duplicate");
    });

    it("returns in_flight for a retry while the first delivery has not confirmed its job", async () => {
      await deduper.claim("slack:Ev1", AT);
      expect(await deduper.claim("slack:Ev1", later(DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS))).toBe("in_flight");
    });

    it("returns claimed, once, to a retry after the in-flight window: the first delivery died before confirming", async () => {
      await deduper.claim("slack:Ev1", AT);
      const retries = await Promise.all(Array.from({ length: 4 }, () => deduper.claim("slack:Ev1", later(DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS + 1))));
      expect(retries.filter((c) => c === "claimed")).toHaveLength(1);
      expect(retries.filter((c) => c === "in_flight")).toHaveLength(3);
    });

    it("returns duplicate for an event recorded before claims were confirmed (no pending field)", async () => {
      await deduper.collection.insertOne({ _id: "slack:EvOLD", receivedAt: AT });
      expect(await deduper.claim("slack:EvOLD", later(DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS + 1))).toBe("duplicate");
    });

    it("returns claimed for a different event id", async () => {
      await deduper.claim("slack:Ev1", AT);
      expect(await deduper.claim("slack:Ev2", AT)).toBe("claimed");
    });

    it("returns claimed for exactly one of many concurrent deliveries", async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => deduper.claim("teams:conv:act-1", AT)));
      expect(results.filter((c) => c === "claimed")).toHaveLength(1);
    });
  });

  describe("release", () => {
    it("lets the next delivery of a released event claim it again", async () => {
      await deduper.claim("slack:Ev1", AT);
      await deduper.release("slack:Ev1");
      expect(await deduper.claim("slack:Ev1", later(1))).toBe("claimed");
    });
  });
});
