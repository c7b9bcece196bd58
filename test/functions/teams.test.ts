import { apiEvent, lambdaContext } from "./support/events.js";
import { startHarness, type Harness } from "./support/harness.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

const activity = {
  type: "message",
  id: "1700000000001",
  serviceUrl: "https://smba.trafficmanager.net/teams/",
  channelId: "msteams",
  from: { id: "29:user", name: "Alice" },
  recipient: { id: "28:bot", name: "Threadwise" },
  conversation: { id: "a:conversation" },
  text: "hello",
};

describe("functions/teams", () => {
  describe("handler", () => {
    // Signed activities need the Bot Framework's keys; those cases run in test/channels/teams against a local JWKS.
    it("returns 401 and enqueues nothing for an activity without a token", async () => {
      const before = h.aws.sent.length;
      const result = await h.teams(
        apiEvent({ method: "POST", path: "/teams/messages", routeKey: "POST /teams/messages", body: activity }),
        lambdaContext("test-threadwise-teams", 10_000),
      );
      expect(result.statusCode).toBe(401);
      expect(h.aws.sent.length).toBe(before);
    });
  });
});
