export { ChannelRoles } from "./channel-roles.js";
export { callerFromClaims, type ClaimNames } from "./caller-from-claims.js";
export { JwtVerifier, DEFAULT_CLOCK_TOLERANCE_S, type JwtVerifierOptions } from "./jwt-verifier.js";
export {
  apiPrincipal,
  callerSchema,
  ISSUER_KINDS,
  ownerKey,
  ownerSchema,
  principalSchema,
  slackPrincipal,
  teamsPrincipal,
  tenantOwner,
  type Caller,
  type ChannelIssuerKind,
  type IssuerKind,
  type Owner,
  type Principal,
} from "./principal.js";
