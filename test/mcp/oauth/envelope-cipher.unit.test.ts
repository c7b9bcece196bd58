import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { DataKeySource } from "../../../lib/mcp/oauth/data-key-source.js";
import { EnvelopeCipher } from "../../../lib/mcp/oauth/envelope-cipher.js";

/** Data keys wrapped by XOR with one random pad (a key source's contract, not its security), counting decrypt calls. */
function countingSource(): DataKeySource & { decrypts: number } {
  const pad = randomBytes(32);
  const xor = (b: Buffer) => Buffer.from(b.map((byte, i) => byte ^ pad[i]));
  return {
    decrypts: 0,
    async generate() {
      const plaintext = randomBytes(32);
      return { plaintext, encrypted: xor(plaintext) };
    },
    async decrypt(encrypted) {
      this.decrypts++;
      return xor(encrypted);
    },
  };
}

describe("EnvelopeCipher", () => {
  describe("open", () => {
    it("returns what was sealed with the same associated data, from a cipher that must decrypt the data key", async () => {
      const source = countingSource();
      const sealed = await new EnvelopeCipher(source).seal('{"access_token":"t"}', "alice");
      expect(JSON.stringify(sealed)).not.toContain("access_token");
      expect(await new EnvelopeCipher(source).open(sealed, "alice")).toBe('{"access_token":"t"}');
      expect(source.decrypts).toBe(1);
    });

    it("throws for other associated data (another user's key) and for changed ciphertext", async () => {
      const cipher = new EnvelopeCipher(countingSource());
      const sealed = await cipher.seal("secret", "alice");
      await expect(cipher.open(sealed, "bob")).rejects.toThrow();
      const data = Buffer.from(sealed.data, "base64");
      data[0] ^= 1;
      await expect(cipher.open({ ...sealed, data: data.toString("base64") }, "alice")).rejects.toThrow();
    });

    it("returns values from a cached data key without another decrypt call", async () => {
      const source = countingSource();
      const cipher = new EnvelopeCipher(source);
      const sealed = await new EnvelopeCipher(source).seal("v", "k");
      await cipher.open(sealed, "k");
      await cipher.open(sealed, "k");
      expect(source.decrypts).toBe(1);
    });
  });
});
