import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOrCreateLocalKeys, mintLocalToken } from "../../lib/local/local-keys.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "threadwise-keys-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("loadOrCreateLocalKeys", () => {
  it("generates a key pair on first use, kept readable by its owner only, and loads the same one after", async () => {
    const first = await loadOrCreateLocalKeys(dir);
    expect((await stat(join(dir, "jwt-key.json"))).mode & 0o777).toBe(0o600);
    const again = await loadOrCreateLocalKeys(dir);
    const token = await mintLocalToken(first, { user: "ada" });
    await expect(jwtVerify(token, again.publicKey)).resolves.toBeDefined();
  });

  it("throws when the key file cannot be read as keys", async () => {
    const broken = await mkdtemp(join(tmpdir(), "threadwise-keys-broken-"));
    await writeFile(join(broken, "jwt-key.json"), "not json");
    await expect(loadOrCreateLocalKeys(broken)).rejects.toThrow();
    expect(await readFile(join(broken, "jwt-key.json"), "utf8")).toBe("not json");
    await rm(broken, { recursive: true, force: true });
  });
});

describe("mintLocalToken", () => {
  it("returns an ES256 token for the user, with the tenant and roles given, expiring in 12 hours by default", async () => {
    const keys = await loadOrCreateLocalKeys(dir);
    const token = await mintLocalToken(keys, { user: "ada", tenant: "acme", roles: ["analyst"] });
    expect(decodeProtectedHeader(token).alg).toBe("ES256");
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ sub: "ada", tenant: "acme", roles: ["analyst"] });
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(12 * 3600);
  });

  it("returns no tenant or roles claim when none are given, and the expiry asked for", async () => {
    const keys = await loadOrCreateLocalKeys(dir);
    const claims = decodeJwt(await mintLocalToken(keys, { user: "bob", roles: [], expiresIn: "5m" }));
    expect(claims).not.toHaveProperty("tenant");
    expect(claims).not.toHaveProperty("roles");
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(300);
  });
});
