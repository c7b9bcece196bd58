export { callerFromClaims, type ClaimNames } from "./caller-from-claims.js";
export { JwtVerifier, DEFAULT_CLOCK_TOLERANCE_S, type JwtVerifierOptions } from "./jwt-verifier.js";
