import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from "jose";
import { DEFAULT_JWT_AUDIENCE, DEFAULT_LOCAL_ISSUER } from "../config/auth-config.js";

/** Where the local server keeps its signing key pair (git-ignored). */
export const DEFAULT_LOCAL_DIR = ".local";
/** Lifetime of a token from `npm run token`. */
export const DEFAULT_TOKEN_TTL = "12h";
const ALG = "ES256";

export interface LocalKeys {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

/** Loads the local key pair, generating it on first use. */
export async function loadOrCreateLocalKeys(dir = DEFAULT_LOCAL_DIR): Promise<LocalKeys> {
  const file = join(dir, "jwt-key.json");
  try {
    const { privateJwk, publicJwk } = JSON.parse(await readFile(file, "utf8")) as { privateJwk: JWK; publicJwk: JWK };
    return { privateKey: (await importJWK(privateJwk, ALG)) as CryptoKey, publicKey: (await importJWK(publicJwk, ALG)) as CryptoKey };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
  await mkdir(dir, { recursive: true });
  await writeFile(file, JSON.stringify({ privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) }), { mode: 0o600 });
  return { privateKey, publicKey };
}

export interface TokenClaims {
  user: string;
  tenant?: string;
  roles?: string[];
  /** A jose duration ("12h") or seconds since the epoch. Default: {@link DEFAULT_TOKEN_TTL}. */
  expiresIn?: string | number;
}

export async function mintLocalToken(keys: LocalKeys, claims: TokenClaims): Promise<string> {
  const payload: Record<string, unknown> = {};
  if (claims.tenant) payload.tenant = claims.tenant;
  if (claims.roles?.length) payload.roles = claims.roles;
  return new SignJWT(payload)
    .setProtectedHeader({ alg: ALG })
    .setSubject(claims.user)
    .setIssuer(DEFAULT_LOCAL_ISSUER)
    .setAudience(DEFAULT_JWT_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(claims.expiresIn ?? DEFAULT_TOKEN_TTL)
    .sign(keys.privateKey);
}
