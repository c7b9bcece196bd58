import { describe, expect, it } from "vitest";
import { derivedUuid } from "../lib/derived-id.js";

describe("derived-id", () => {
  describe("derivedUuid", () => {
    it("returns the ids derived before the helper was shared (a redelivered job or a retried request names the same turn)", () => {
      expect(derivedUuid("turn:slack:Ev0001", 5)).toBe("337f5080-246e-510a-b253-5a1ac51af809");
      expect(derivedUuid(JSON.stringify(["api:alice", "c1", "key-1"]), 8)).toBe("9623c8ff-e1bb-85b0-bc78-e282ba250538");
    });

    it("returns a UUID with the given version and the RFC 9562 variant", () => {
      for (const name of ["a", "b", "c", "d", "e", "f", "g", "h"]) {
        expect(derivedUuid(name, 8)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      }
    });

    it("returns different ids for different names", () => {
      expect(derivedUuid("turn:slack:Ev0001", 5)).not.toBe(derivedUuid("turn:slack:Ev0002", 5));
    });
  });
});
