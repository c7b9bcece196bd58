import { mkdtemp, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LOCAL_MCP_OAUTH_KEY_FILE, LocalDataKeySource } from "../../../lib/mcp/oauth/local-data-key-source.js";

describe("LocalDataKeySource", () => {
  describe("decrypt", () => {
    it("returns the data key from another source over the same directory, whose key file it made with mode 0600", async () => {
      const dir = await mkdtemp(join(tmpdir(), "tw-mcp-key-"));
      const key = await new LocalDataKeySource(dir).generate();
      expect(key.plaintext).toHaveLength(32);
      expect((await stat(join(dir, LOCAL_MCP_OAUTH_KEY_FILE))).mode & 0o777).toBe(0o600);
      expect(await new LocalDataKeySource(dir).decrypt(key.encrypted)).toEqual(key.plaintext);
    });

    it("throws for a data key wrapped under another directory's key", async () => {
      const key = await new LocalDataKeySource(await mkdtemp(join(tmpdir(), "tw-mcp-key-"))).generate();
      await expect(new LocalDataKeySource(await mkdtemp(join(tmpdir(), "tw-mcp-key-"))).decrypt(key.encrypted)).rejects.toThrow();
    });
  });
});
