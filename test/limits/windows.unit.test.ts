import { describe, expect, it } from "vitest";
import { isoDay, windowsAt } from "../../lib/limits/windows.js";

describe("windowsAt", () => {
  it("returns the UTC minute, day and month keys and when each ends, across a year's end", () => {
    const w = windowsAt(new Date("2026-12-31T23:59:30Z"));
    expect(w).toEqual({
      minute: "202612312359",
      day: "20261231",
      month: "202612",
      minuteEnds: new Date("2027-01-01T00:00:00Z"),
      dayEnds: new Date("2027-01-01T00:00:00Z"),
      monthEnds: new Date("2027-01-01T00:00:00Z"),
    });
  });
});

describe("isoDay", () => {
  it("returns a day key as YYYY-MM-DD", () => {
    expect(isoDay("20260305")).toBe("2026-03-05");
  });
});
