import { describe, expect, it } from "vitest";
import { planPrune, type PruneCandidate } from "../../../lib/store/checkpoint/prune-plan.js";

/** A linear run of root checkpoints c1 → c2 → …, ids in write order; `sources` by id. */
function chain(n: number, sources: Record<string, string> = {}): PruneCandidate[] {
  return Array.from({ length: n }, (_, i) => ({
    checkpoint_ns: "",
    checkpoint_id: `c${String(i + 1).padStart(2, "0")}`,
    parent_checkpoint_id: i === 0 ? undefined : `c${String(i).padStart(2, "0")}`,
    source: sources[`c${String(i + 1).padStart(2, "0")}`] ?? "loop",
  }));
}

describe("planPrune", () => {
  it("returns the root steps to drop: all but the latest, the run starts and the branch tips", () => {
    const plan = planPrune(chain(6, { c01: "input", c04: "input" }), 1);
    expect(plan.drop.get("")).toEqual(["c05", "c03", "c02"]);
    expect(plan.finished.size).toBe(0);
  });

  it("returns nothing to drop when every checkpoint is among the latest kept", () => {
    expect(planPrune(chain(3), 3).drop.size).toBe(0);
  });

  it("returns a forked branch's tip as kept", () => {
    const headers = [...chain(4), { checkpoint_ns: "", checkpoint_id: "c03b", parent_checkpoint_id: "c02", source: "loop" }];
    const drop = planPrune(headers, 1).drop.get("") ?? [];
    expect(drop).not.toContain("c03b");
    expect(drop).toContain("c01");
  });

  it("keeps a fork and an update as run starts", () => {
    const drop = planPrune(chain(5, { c02: "fork", c03: "update" }), 1).drop.get("") ?? [];
    expect(drop).toEqual(["c04", "c01"]);
  });

  it("returns a subgraph namespace as finished when its newest checkpoint is not under the latest root", () => {
    const sub = (id: string, parent: string): PruneCandidate => ({ checkpoint_ns: "tools:1", checkpoint_id: id, parents: { "": parent } });
    const plan = planPrune([...chain(3), sub("s1", "c02"), sub("s2", "c02")], 1);
    expect([...plan.finished]).toEqual(["tools:1"]);
    expect(plan.drop.has("tools:1")).toBe(false);
  });

  it("returns a subgraph namespace as kept when the root checkpoint it ran under is kept, though not the latest", () => {
    const sub = (id: string): PruneCandidate => ({ checkpoint_ns: "tools:1", checkpoint_id: id, parents: { "": "c02" } });
    const plan = planPrune([...chain(4, { c02: "update" }), sub("s1"), sub("s2")], 1);
    expect(plan.finished.size).toBe(0);
    expect(plan.drop.get("tools:1")).toEqual(["s1"]);
  });

  it("returns a subgraph namespace whose checkpoints name no root checkpoint as kept while the root checkpoint before it is", () => {
    // updateState on a subgraph's namespace before the subgraph ran writes a checkpoint without `parents`.
    const edited: PruneCandidate = { checkpoint_ns: "sub:1", checkpoint_id: "c03x", parents: {} };
    expect(planPrune([...chain(3), edited], 1).finished.size).toBe(0);
    expect([...planPrune([...chain(4), edited], 1).finished]).toEqual(["sub:1"]);
  });

  it("returns nothing to drop in a namespace whose checkpoints rebuild a channel from earlier steps' writes (DeltaChannel)", () => {
    const headers = chain(6, { c01: "input", c04: "input" }).map((h) => ({ ...h, replaysWrites: h.checkpoint_id === "c06" }));
    expect(planPrune(headers, 1).drop.size).toBe(0);
  });

  it("returns a running subgraph's older checkpoints to drop, keeping its latest", () => {
    const sub = (id: string): PruneCandidate => ({ checkpoint_ns: "tools:1", checkpoint_id: id, parents: { "": "c03" } });
    const plan = planPrune([...chain(3), sub("s1"), sub("s2"), sub("s3")], 2);
    expect(plan.finished.size).toBe(0);
    expect(plan.drop.get("tools:1")).toEqual(["s1"]);
  });
});
