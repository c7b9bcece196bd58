import { jwtClaims } from "./support/events.js";
import { startHarness, type Harness } from "./support/harness.js";

/**
 * functions/shared/content-keys.ts: a function in AWS has no `.local/`, so content encryption on
 * with `CONTENT_KEYS=local` (the local server's default) cannot seal. It must say so where an
 * operator looks (the log line names the setting to give) and refuse, not store contents in clear.
 */
const lines: string[] = [];
let h: Harness;

beforeAll(async () => {
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
  }
  h = await startHarness({ env: { POWERTOOLS_LOG_LEVEL: "INFO", CONTENT_KEYS: "local" } });
});
afterAll(async () => {
  await h?.close();
  vi.restoreAllMocks();
});

describe("functions/shared/content-keys", () => {
  describe("contentKeysFor", () => {
    it("answers 503 and logs the setting to give when a function is told CONTENT_KEYS=local, storing nothing", async () => {
      const created = await h.api({
        method: "POST",
        path: "/v1/conversations",
        routeKey: "POST /v1/conversations",
        claims: jwtClaims("alice", { tenant: "acme" }),
      });
      expect(created).toMatchObject({ status: 503, json: { error: { code: "service_unavailable" } } });
      const logged = lines.filter((l) => l.includes("content keys unavailable")).map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(logged[0]).toMatchObject({ level: "ERROR", setting: "CONTENT_KEYS", reason: expect.stringContaining("set CONTENT_KEYS=kms") });
      expect(await h.database.db.collection("conversations").countDocuments()).toBe(0);
      expect(h.kms.calls).toEqual([]);
    });
  });
});
