import { describe, expect, it } from "vitest";
import { reserved } from "../../../lib/store/migrations/003-reserved.js";

describe("migration 003 reserved", () => {
  describe("up", () => {
    it("returns true without touching the database (version 3 is the content-encryption migration's)", async () => {
      expect(reserved.version).toBe(3);
      await expect(reserved.up(undefined as never)).resolves.toBe(true);
    });
  });
});
