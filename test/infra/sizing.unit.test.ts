import { readFileSync } from "node:fs";
import { DEFAULT_TURN_PROFILE, sizeFor, sizingTable } from "../../infra/sizing.js";
import { planConnections } from "../../infra/connection-budget.js";

describe("sizing", () => {
  describe("sizeFor", () => {
    it("returns the turns at once by Little's law with headroom, and the Lambda quota their reservations and the 100 unreserved need", () => {
      const s = sizeFor(10);
      expect(s.turnConcurrency).toBe(10 * DEFAULT_TURN_PROFILE.turnSeconds * DEFAULT_TURN_PROFILE.headroom);
      // Turn containers, two webhooks of 10, the set-up, and Lambda's 100.
      expect(s.lambdaConcurrencyQuota).toBe(s.turnConcurrency + 20 + 1 + 100);
    });

    it("returns a connection budget that the stack's own plan accepts for those containers", () => {
      const s = sizeFor(10);
      const plan = planConnections({
        budget: s.mongodbConnections,
        replicaSetMembers: 3,
        workerMaxConcurrency: 50,
        scheduledSweep: true,
        streamConcurrency: 50,
      });
      expect(plan.total).toBeLessThanOrEqual(s.mongodbConnections);
      expect(plan.reservedConcurrency.api + plan.reservedConcurrency.worker + plan.reservedConcurrency.stream).toBe(s.turnConcurrency);
    });

    it("returns Bedrock's requests and tokens per minute for the turns' model calls", () => {
      expect(sizeFor(1)).toMatchObject({ bedrockRequestsPerMinute: 120, bedrockTokensPerMinute: 120 * 6_400 });
    });
  });

  describe("sizingTable", () => {
    it("returns the table docs/deploying.md holds (run `npx tsx scripts/sizing.ts` when this fails)", () => {
      expect(readFileSync(new URL("../../docs/deploying.md", import.meta.url), "utf8")).toContain(sizingTable());
    });
  });
});
