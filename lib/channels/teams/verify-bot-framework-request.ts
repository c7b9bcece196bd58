import { errors, jwtVerify, type JWTPayload } from "jose";
import { z } from "zod";
import { ChannelAuthenticationError, ServiceUnavailableError } from "../../errors.js";
import { OpenIdKeySource } from "../../auth/open-id-key-source.js";
import { isTeamsServiceUrl, TEAMS_CHANNEL_ID } from "./teams-identity.js";

/** Where the Bot Framework publishes the keys that sign its requests to bots. */
export const DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL = "https://login.botframework.com/v1/.well-known/openidconfiguration";
/** Issuer of the tokens the Bot Framework Service (and so Teams) sends to bots. */
export const DEFAULT_BOT_FRAMEWORK_ISSUER = "https://api.botframework.com";
/** Clock skew the Bot Framework's own validators allow. */
export const DEFAULT_BOT_FRAMEWORK_CLOCK_TOLERANCE_SECONDS = 5 * 60;

/** The tokens carry the claim as `serviceurl` although the prose writes `serviceUrl`; both are read. */
const SERVICE_URL_CLAIMS = ["serviceurl", "serviceUrl"] as const;

const activityHeadSchema = z.object({ serviceUrl: z.string().min(1), channelId: z.string().optional() });

/** One key source per metadata URL for the life of the container, so keys are fetched once, not per request. */
const keySources = new Map<string, OpenIdKeySource>();

function keySourceFor(url: string): OpenIdKeySource {
  let source = keySources.get(url);
  if (!source) {
    source = new OpenIdKeySource(url);
    keySources.set(url, source);
  }
  return source;
}

export interface VerifyBotFrameworkRequestInput {
  headers: Record<string, string | undefined>;
  /** The activity as parsed JSON; its `serviceUrl` must match the token's and its `channelId` be endorsed. */
  body: unknown;
  /** The bot's Microsoft App ID: the token's audience. */
  appId: string;
  /** Default: {@link DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL}. */
  openIdMetadataUrl?: string;
  /** Default: {@link DEFAULT_BOT_FRAMEWORK_ISSUER}. */
  issuer?: string;
  /** Default: the current time. */
  now?: Date;
  /** Where a stand-in Bot Connector serves (`TEAMS_SERVICE_URL_ORIGIN`): the only origin a `serviceUrl` may name. Default: Teams' hosts. */
  serviceUrlOrigin?: string;
  /** Default: {@link DEFAULT_BOT_FRAMEWORK_CLOCK_TOLERANCE_SECONDS}. */
  clockToleranceSeconds?: number;
}

function reasonOf(error: unknown): ChannelAuthenticationError | ServiceUnavailableError {
  if (error instanceof errors.JWTExpired) {
    return new ChannelAuthenticationError("bot framework token expired", "expired", { cause: error });
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "iss") return new ChannelAuthenticationError("bot framework token issuer mismatch", "wrong_issuer", { cause: error });
    if (error.claim === "aud") return new ChannelAuthenticationError("bot framework token audience mismatch", "wrong_audience", { cause: error });
    if (error.claim === "nbf") return new ChannelAuthenticationError("bot framework token not yet valid", "expired", { cause: error });
    return new ChannelAuthenticationError("bot framework token claim invalid", "malformed", { cause: error });
  }
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    // A forged signature, or a key id the Bot Framework does not publish.
    return new ChannelAuthenticationError("bot framework token signature invalid", "bad_signature", { cause: error });
  }
  if (
    error instanceof errors.JWSInvalid ||
    error instanceof errors.JWTInvalid ||
    error instanceof errors.JOSEAlgNotAllowed ||
    error instanceof errors.JOSENotSupported
  ) {
    return new ChannelAuthenticationError("bot framework token malformed", "malformed", { cause: error });
  }
  // What is left is the key set itself failing: timeout, non-200, unreadable, or fetch errors.
  return new ServiceUnavailableError("bot framework signing keys unavailable", undefined, { cause: error });
}

/**
 * Authenticates a request from the Bot Framework Service as its connector protocol requires:
 * an RS256 JWT in `Authorization: Bearer`, signed by a key from the OpenID metadata's key set
 * that endorses the activity's channel, issued by the Bot Framework, for this bot's app id,
 * and naming the activity's `serviceUrl`. Only Teams is taken: the channel must be `msteams`
 * and the `serviceUrl` a Teams Bot Connector's, since other channels (Web Chat, Direct Line) let
 * their clients name the user. Returns the verified claims.
 *
 * Throws `ChannelAuthenticationError` for a refused token and `ServiceUnavailableError` when
 * the keys cannot be fetched (the Bot Framework retries on 5xx).
 */
export async function verifyBotFrameworkRequest(input: VerifyBotFrameworkRequestInput): Promise<JWTPayload> {
  const authorization = input.headers.authorization;
  if (!authorization) throw new ChannelAuthenticationError("authorization header missing", "missing");
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
  if (!match) throw new ChannelAuthenticationError("authorization is not a bearer token", "malformed");

  const activity = activityHeadSchema.safeParse(input.body);
  if (!activity.success) throw new ChannelAuthenticationError("activity has no serviceUrl", "malformed");
  if (activity.data.channelId !== TEAMS_CHANNEL_ID) throw new ChannelAuthenticationError("activity is not from Teams", "wrong_channel");
  if (!isTeamsServiceUrl(activity.data.serviceUrl, input.serviceUrlOrigin)) {
    throw new ChannelAuthenticationError("serviceUrl is not a Teams Bot Connector", "wrong_service_url");
  }

  const source = keySourceFor(input.openIdMetadataUrl ?? DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL);
  const keys = await source.keys();
  let verified;
  try {
    verified = await jwtVerify(match[1], keys, {
      algorithms: ["RS256"],
      issuer: input.issuer ?? DEFAULT_BOT_FRAMEWORK_ISSUER,
      audience: input.appId,
      clockTolerance: input.clockToleranceSeconds ?? DEFAULT_BOT_FRAMEWORK_CLOCK_TOLERANCE_SECONDS,
      currentDate: input.now,
      requiredClaims: ["exp"],
    });
  } catch (error) {
    throw reasonOf(error);
  }

  const claimed = SERVICE_URL_CLAIMS.map((name) => verified.payload[name]).find((v) => typeof v === "string");
  if (claimed !== activity.data.serviceUrl) {
    throw new ChannelAuthenticationError("token serviceUrl does not match the activity", "wrong_service_url");
  }

  // A Bot Framework key signs only for the channels it endorses (msteams, webchat, …).
  // Stryker disable next-line OptionalChaining: jwks() is set once a token has verified against the fetched key set
  const jwk = keys.jwks()?.keys.find((k) => k.kid === verified.protectedHeader.kid);
  const endorsements: unknown = (jwk as Record<string, unknown> | undefined)?.endorsements;
  if (!Array.isArray(endorsements) || !endorsements.includes(TEAMS_CHANNEL_ID)) {
    throw new ChannelAuthenticationError("signing key does not endorse Teams", "not_endorsed");
  }
  return verified.payload;
}
