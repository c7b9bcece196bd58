import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  ENDED_TURN_STATUSES,
  FINAL_TURN_STATUSES,
  hasEnded,
  isLegalTransition,
  statusesBefore,
  TURN_FAILURE_CODES,
  TURN_TRANSITIONS,
} from "../../lib/store/turn-lifecycle.js";
import { TURN_STATUSES } from "../../lib/store/turn-store.js";

describe("turn lifecycle", () => {
  describe("TURN_TRANSITIONS", () => {
    it("returns no transition out of a final status", () => {
      for (const t of TURN_TRANSITIONS) expect(FINAL_TURN_STATUSES as readonly string[], `${t.from} → ${t.to}`).not.toContain(t.from);
    });

    it("returns a way into every status, and out of every status but the final ones", () => {
      const into = new Set<string>(TURN_TRANSITIONS.map((t) => t.to));
      const outOf = new Set<string>(TURN_TRANSITIONS.map((t) => t.from));
      expect(TURN_STATUSES.filter((s) => !into.has(s))).toEqual([]);
      expect(TURN_STATUSES.filter((s) => !outOf.has(s))).toEqual([...FINAL_TURN_STATUSES]);
    });
  });

  describe("hasEnded", () => {
    it("returns true for a completed, failed or superseded turn and false for one queued, running or waiting for approval", () => {
      expect(TURN_STATUSES.filter(hasEnded)).toEqual(["completed", "failed", "superseded"]);
    });

    it("returns true only for statuses that no transition leaves but a retry's claim", () => {
      for (const t of TURN_TRANSITIONS.filter((t) => (ENDED_TURN_STATUSES as readonly string[]).includes(t.from))) expect(t.by).toBe("claim");
    });
  });

  describe("TURN_FAILURE_CODES", () => {
    it("returns exactly the codes docs/api.md's failure code table documents", () => {
      const api = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
      const table = api.slice(api.indexOf("## Failure codes"), api.indexOf("## Try it with curl"));
      const documented = table
        .split("\n")
        .filter((line) => line.startsWith("| `"))
        .flatMap((line) => [...line.split("|")[1].matchAll(/`([a-z_]+)`/g)].map((m) => m[1]));
      expect(documented.sort()).toEqual([...TURN_FAILURE_CODES].sort());
    });
  });

  describe("isLegalTransition", () => {
    it("returns true for a listed transition and false for one out of a final status", () => {
      expect(isLegalTransition("running", "completed")).toBe(true);
      expect(isLegalTransition("completed", "running")).toBe(false);
      expect(isLegalTransition("superseded", "failed")).toBe(false);
    });
  });

  describe("statusesBefore", () => {
    it("returns the statuses a store method moves a turn from", () => {
      expect(statusesBefore("claim").sort()).toEqual(["awaiting_approval", "failed", "queued", "running"]);
      expect(statusesBefore("complete")).toEqual(["running"]);
    });
  });
});
