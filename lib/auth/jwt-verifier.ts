import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey, type CryptoKey, type KeyObject } from "jose";
import { AuthenticationError } from "../errors.js";
import type { Caller } from "./principal.js";
import { callerFromClaims, type ClaimNames } from "./caller-from-claims.js";
import { OpenIdKeySource } from "./open-id-key-source.js";

/** Clock skew tolerated on `exp` and `nbf`. */
export const DEFAULT_CLOCK_TOLERANCE_S = 30;

export interface JwtVerifierOptions extends ClaimNames {
  /** Accepted audiences: a token naming any of them passes. */
  audience: string | string[];
  issuer?: string;
  /**
   * A JWKS URL (an identity provider), the keys an OpenID metadata document names (as API Gateway's JWT
   * authorizer finds them), or a public key (local mode).
   */
  key: URL | OpenIdKeySource | CryptoKey | KeyObject;
  /** Default: {@link DEFAULT_CLOCK_TOLERANCE_S}. */
  clockToleranceS?: number;
}

/** Verifies `Authorization: Bearer <JWT>` and names the caller. */
export class JwtVerifier {
  private readonly key: JWTVerifyGetKey | OpenIdKeySource | CryptoKey | KeyObject;

  constructor(private readonly options: JwtVerifierOptions) {
    this.key = options.key instanceof URL ? createRemoteJWKSet(options.key) : options.key;
  }

  async verifyAuthorizationHeader(header: string | undefined): Promise<Caller> {
    if (!header) throw new AuthenticationError("missing bearer token");
    const match = /^Bearer\s+(\S+)$/i.exec(header.trim());
    if (!match) throw new AuthenticationError("authorization header is not a bearer token");
    return this.verify(match[1]);
  }

  async verify(token: string): Promise<Caller> {
    // Outside the try: metadata that cannot be read is the issuer's outage (503), not the caller's bad token.
    const key = this.key instanceof OpenIdKeySource ? await this.key.keys() : this.key;
    try {
      const { payload } = await jwtVerify(token, key as CryptoKey, {
        audience: this.options.audience,
        issuer: this.options.issuer,
        clockTolerance: this.options.clockToleranceS ?? DEFAULT_CLOCK_TOLERANCE_S,
        requiredClaims: ["sub", "exp"],
      });
      return callerFromClaims(payload, this.options);
    } catch (error) {
      if (error instanceof AuthenticationError) throw error;
      const reason = error instanceof joseErrors.JWTExpired ? "token expired" : "invalid token";
      throw new AuthenticationError(reason, { cause: error });
    }
  }
}
