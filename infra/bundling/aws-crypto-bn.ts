// Stands in for bn.js (89 KB minified) where the AWS Encryption SDK's message format needs it: the
// 8-byte big-endian content length in a frame's additional data (`aad_factory`) and the content length
// of a non-framed body (`decode_body_header`). Both are integers below 2^53, which a double holds
// exactly; a larger one is refused as bn.js's `toNumber` refuses it. The SDK's other bn.js uses are its
// ECDSA helpers, which the bundles leave out (the content suite has no signature; bundle-plugins.ts).
const TWO_POW_32 = 2 ** 32;

export default class BN {
  readonly #value: number;

  constructor(value: number | readonly number[], _base?: number, endian: "be" | "le" = "be") {
    if (typeof value === "number") {
      if (!Number.isSafeInteger(value) || value < 0) throw new Error("Number can only safely store up to 53 bits");
      this.#value = value;
      return;
    }
    const bytes = endian === "be" ? value : [...value].reverse();
    let n = 0;
    for (const byte of bytes) {
      n = n * 256 + byte;
      if (n > Number.MAX_SAFE_INTEGER) throw new Error("Number can only safely store up to 53 bits");
    }
    this.#value = n;
  }

  toNumber(): number {
    return this.#value;
  }

  /** The value as `length` big-endian (or little-endian) bytes. */
  toArray(endian: "be" | "le" = "be", length = 8): number[] {
    const high = Math.floor(this.#value / TWO_POW_32);
    const low = this.#value % TWO_POW_32;
    const bytes = new Array<number>(Math.max(length, 8)).fill(0);
    for (let i = 0; i < 4; i++) {
      bytes[bytes.length - 1 - i] = (low >>> (8 * i)) & 0xff;
      bytes[bytes.length - 5 - i] = (high >>> (8 * i)) & 0xff;
    }
    const out = bytes.slice(bytes.length - length);
    return endian === "be" ? out : out.reverse();
  }
}
