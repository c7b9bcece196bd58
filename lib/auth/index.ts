export { adminAuthorityOf, authorityCovers, authorizeAdmin, type AdminAuthority, type AdminRoles, type AdminTarget } from "./admin-scope.js";
export { ChannelRoles } from "./channel-roles.js";
export { callerFromClaims, type ClaimNames } from "./caller-from-claims.js";
export { JwtVerifier, DEFAULT_CLOCK_TOLERANCE_S, type JwtVerifierOptions } from "./jwt-verifier.js";
export {
  DEFAULT_OPENID_FETCH_TIMEOUT_MS,
  DEFAULT_OPENID_KEYS_MAX_AGE_MS,
  DEFAULT_OPENID_METADATA_MAX_AGE_MS,
  OpenIdKeySource,
  type OpenIdKeySourceOptions,
} from "./open-id-key-source.js";
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
