import { MongoNetworkError } from "mongodb";
import { describe, expect, it } from "vitest";
import { retryWhileUnavailable } from "../../lib/store/retry-while-unavailable.js";

/** A write that meets an unreachable database `failures` times, then succeeds. */
function flaky(failures: number) {
  const tries: number[] = [];
  const write = async () => {
    tries.push(Date.now());
    if (tries.length <= failures) throw new MongoNetworkError("connection refused");
  };
  return { write, tries };
}

describe("retryWhileUnavailable", () => {
  it("returns done once the write succeeds, trying again while the database is away", async () => {
    const { write, tries } = flaky(3);
    await expect(retryWhileUnavailable(write, { untilMs: Date.now() + 5_000, baseMs: 10, maxMs: 40 })).resolves.toEqual({ kind: "done" });
    expect(tries).toHaveLength(4);
  });

  it("returns expired when the database stays away past untilMs", async () => {
    const { write, tries } = flaky(Number.POSITIVE_INFINITY);
    const started = Date.now();
    const outcome = await retryWhileUnavailable(write, { untilMs: started + 150, baseMs: 10, maxMs: 40 });
    expect(outcome.kind).toBe("expired");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(tries.length).toBeGreaterThan(2);
  });

  it("returns failed at once on an error that is not the database's absence", async () => {
    let tries = 0;
    const refused = new Error("a later attempt holds the conversation");
    const outcome = await retryWhileUnavailable(
      async () => {
        tries += 1;
        throw refused;
      },
      { untilMs: Date.now() + 5_000 },
    );
    expect(outcome).toEqual({ kind: "failed", error: refused });
    expect(tries).toBe(1);
  });
});
