import { randomInt } from "node:crypto";

/** Random bits in a version's fraction while the counter leaves room for them in a double. */
const FRACTION_BITS = 32;

/**
 * The channel version after `current`: the next integer counter plus a random fraction, so two
 * branches (or two writers) that advance a channel from the same version never produce the same
 * version, while versions stay numbers that compare as LangGraph's integers do (and as the
 * integer versions of threads written by stock `MongoDBSaver`). Strings of the Postgres form
 * (`"<counter>.<random>"`) are read for their counter.
 */
export function nextChannelVersion(current: string | number | undefined): number {
  const counter = current === undefined ? 0 : Math.floor(versionOrder(String(current)) as number) || 0;
  const next = counter + 1;
  const bits = Math.min(FRACTION_BITS, 52 - Math.ceil(Math.log2(next + 1)));
  return next + randomInt(1, 2 ** bits) / 2 ** bits;
}

/**
 * Where a stored version key sorts: its leading number (`"7.25"`, `"7.25#2"` for the third link
 * of a list version, `"7~<checkpoint>"` for a value carried over from a legacy checkpoint), or
 * the key itself when it does not start with one (versions of savers that use other strings).
 */
export function versionOrder(key: string): number | string {
  const match = /^\d+(\.\d+)?(e[+-]?\d+)?/.exec(key);
  return match ? Number(match[0]) : key;
}

/** Compares two stored version keys by {@link versionOrder}; numbers sort before other strings. */
export function compareVersionKeys(a: string, b: string): number {
  const x = versionOrder(a);
  const y = versionOrder(b);
  if (typeof x === "number" && typeof y === "number") return Math.sign(x - y);
  if (typeof x === "number") return -1;
  if (typeof y === "number") return 1;
  return x.localeCompare(y);
}
