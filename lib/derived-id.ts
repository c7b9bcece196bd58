import { createHash } from "node:crypto";

/**
 * A UUID-shaped id derived from a name (SHA-256, RFC 9562 layout), so that the same name always
 * names the same record. The version nibble is the caller's: channel turn ids carry 5, API turn
 * ids from an Idempotency-Key carry 8, as they always have, so ids derived before stay the same.
 */
export function derivedUuid(name: string, version: 5 | 8): string {
  const h = createHash("sha256").update(name).digest("hex");
  const variant = ((Number.parseInt(h[16], 16) & 3) | 8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${version}${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
