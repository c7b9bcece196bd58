import { describe, expect, it } from "vitest";
import { canonicalHash, canonicalJson, sha256Hex } from "../../lib/audit/canonical-json.js";

describe("canonicalJson", () => {
  it("returns the same text whatever order the keys were written in, at every depth", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ a: { c: null, d: [1, { y: 2, z: 1 }] }, b: 1 })).toBe(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } }));
  });

  it("returns dates as ISO 8601 and leaves undefined members out", () => {
    expect(canonicalJson({ at: new Date("2026-12-01T10:00:00Z"), gone: undefined })).toBe('{"at":"2026-12-01T10:00:00.000Z"}');
  });
});

describe("canonicalHash", () => {
  it("returns the SHA-256 of the canonical JSON", () => {
    expect(canonicalHash({ b: 2, a: 1 })).toBe(sha256Hex('{"a":1,"b":2}'));
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });
});
