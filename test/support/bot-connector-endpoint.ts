import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One reply activity the endpoint accepted. */
export interface RecordedTeamsReply {
  conversationId: string;
  /** The activity replied to (last path segment). */
  activityId: string;
  activity: Record<string, unknown>;
}

export interface BotConnectorEndpoint {
  /** Use as the activity's `serviceUrl` (ends in `/`, as Teams' do). */
  serviceUrl: string;
  /** Token URL template for `BotConnectorTokenProvider` (`{tenant}` left in). */
  tokenUrl: string;
  /** Microsoft Graph base URL (ends in `/v1.0/`): `checkMemberGroups` with a Graph-scoped token. */
  graphUrl: string;
  /** `checkMemberGroups` requests: the user's object id, the tenant of the token, the group ids asked for. */
  graphChecks: { objectId: string; tenant: string; groupIds: string[] }[];
  /** The next `checkMemberGroups` is answered with this HTTP status. */
  failNextGraphCheck(status: number): void;
  /** `GET /users/{id}?$select=userType` requests: the user's object id, the tenant of the token, the `$select` asked for. */
  userTypeReads: { objectId: string; tenant: string; select: string | null }[];
  /** The next user read is answered with this HTTP status. */
  failNextUserRead(status: number): void;
  replies: RecordedTeamsReply[];
  /** When (`performance.now()`) each reply arrived, in the order of `replies`. */
  arrivals: number[];
  /** Token requests, by tenant path segment. */
  tokenRequests: { tenant: string; clientId: string; scope: string }[];
  /** Forgets every issued token, as when a token is revoked: the next reply gets 401. */
  revokeTokens(): void;
  /** The next reply is answered with this HTTP status. */
  failNextReply(status: number): void;
  close(): Promise<void>;
}

export interface BotConnectorEndpointOptions {
  appId: string;
  appPassword: string;
  /** Entra groups (transitive) of each user object id, for Graph's `checkMemberGroups`. */
  groupMembers?: Record<string, string[]>;
  /**
   * Entra `userType` by object id, for Graph's `GET /users/{id}`; a user not listed is a "Member",
   * and `null` is answered as Graph answers an account without one.
   */
  userTypes?: Record<string, string | null>;
  /**
   * Whether the bot may stream (typing activities with a `streaminfo` entity); otherwise they are
   * refused with 403 `ContentStreamNotAllowed`, as Teams refuses them where it cannot. Default: false.
   */
  streaming?: boolean;
}

interface StreamInfo {
  type: "streaminfo";
  streamId?: string;
  streamType?: string;
  streamSequence?: number;
}

/** A stream as Teams tracks it: its last sequence and text, and whether a final message closed it. */
interface OpenStream {
  sequence: number;
  text: string;
  closed: boolean;
}

/**
 * Teams' rules for streamed replies: the first update has no stream id and sequence 1; every
 * later one names the stream (the first activity's id) with the next sequence; streaming text
 * holds all text before it; a final `message` closes the stream, after which nothing is taken.
 * Returns the error to answer, or undefined.
 */
function checkStreaming(activity: Record<string, unknown>, streams: Map<string, OpenStream>, allowed: boolean): { status: number; code: string } | undefined {
  const info = ((activity.entities as StreamInfo[] | undefined) ?? []).find((e) => e.type === "streaminfo");
  if (!info) return undefined;
  if (!allowed) return { status: 403, code: "ContentStreamNotAllowed" };
  const text = typeof activity.text === "string" ? activity.text : "";
  if (activity.type === "typing") {
    if (info.streamType !== "informative" && info.streamType !== "streaming") return { status: 400, code: "BadArgument" };
    if (!info.streamId) return info.streamSequence === 1 ? undefined : { status: 400, code: "ContentStreamSequenceOrderPreConditionFailed" };
    const stream = streams.get(info.streamId);
    if (!stream) return { status: 404, code: "ContentStreamNotFound" };
    if (stream.closed) return { status: 403, code: "ContentStreamNotAllowed" };
    if (info.streamSequence !== stream.sequence + 1) return { status: 400, code: "ContentStreamSequenceOrderPreConditionFailed" };
    if (info.streamType === "streaming" && !text.startsWith(stream.text)) return { status: 400, code: "BadArgument" };
    return undefined;
  }
  if (activity.type !== "message" || info.streamType !== "final" || !info.streamId) return { status: 400, code: "BadArgument" };
  const stream = streams.get(info.streamId);
  if (!stream) return { status: 404, code: "ContentStreamNotFound" };
  return stream.closed ? { status: 403, code: "ContentStreamNotAllowed" } : undefined;
}

/** Records what an accepted streamed activity changes; the id of a stream's first update names it. */
function trackStreaming(activity: Record<string, unknown>, id: string, streams: Map<string, OpenStream>): void {
  const info = ((activity.entities as StreamInfo[] | undefined) ?? []).find((e) => e.type === "streaminfo");
  if (!info) return;
  const text = typeof activity.text === "string" ? activity.text : "";
  const stream = info.streamId ? streams.get(info.streamId)! : { sequence: 0, text: "", closed: false };
  if (!info.streamId) streams.set(id, stream);
  if (activity.type === "typing") {
    stream.sequence = info.streamSequence ?? stream.sequence;
    if (info.streamType === "streaming") stream.text = text;
  } else stream.closed = true;
}

async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/**
 * On loopback, the parts of Entra's token endpoint (client credentials), of the Bot Connector
 * REST API (reply to an activity) and of Microsoft Graph (`checkMemberGroups`, a user's `userType`) that the Teams
 * replier and the Entra group directory use. Tokens are opaque
 * and checked on every reply; replies are recorded.
 */
export async function startBotConnectorEndpoint(options: BotConnectorEndpointOptions): Promise<BotConnectorEndpoint> {
  const issued = new Set<string>();
  /** Graph tokens, by the tenant they were issued for; never accepted by the connector, nor its tokens by Graph. */
  const graphTokens = new Map<string, string>();
  const graphChecks: { objectId: string; tenant: string; groupIds: string[] }[] = [];
  const graphFailures: number[] = [];
  const userTypeReads: { objectId: string; tenant: string; select: string | null }[] = [];
  const userReadFailures: number[] = [];
  const replies: RecordedTeamsReply[] = [];
  const arrivals: number[] = [];
  const tokenRequests: { tenant: string; clientId: string; scope: string }[] = [];
  const failures: number[] = [];
  const streams = new Map<string, OpenStream>();

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    if (req.method === "POST" && token) {
      const form = new URLSearchParams(await readText(req));
      const request = { tenant: decodeURIComponent(token[1]), clientId: form.get("client_id") ?? "", scope: form.get("scope") ?? "" };
      tokenRequests.push(request);
      if (form.get("grant_type") !== "client_credentials") return json(res, 400, { error: "unsupported_grant_type" });
      if (request.clientId !== options.appId || form.get("client_secret") !== options.appPassword) {
        return json(res, 401, { error: "invalid_client" });
      }
      if (request.scope === "https://graph.microsoft.com/.default") {
        const graphToken = `test-graph-token-${randomUUID()}`;
        graphTokens.set(graphToken, request.tenant);
        return json(res, 200, { token_type: "Bearer", expires_in: 3599, ext_expires_in: 3599, access_token: graphToken });
      }
      if (request.scope !== "https://api.botframework.com/.default") return json(res, 400, { error: "invalid_scope" });
      const accessToken = `test-connector-token-${randomUUID()}`;
      issued.add(accessToken);
      return json(res, 200, { token_type: "Bearer", expires_in: 3599, ext_expires_in: 3599, access_token: accessToken });
    }
    const check = /^\/graph\/v1\.0\/users\/([^/]+)\/checkMemberGroups$/.exec(url.pathname);
    if (req.method === "POST" && check) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      const body = JSON.parse((await readText(req)) || "{}") as { groupIds?: unknown };
      const tenant = bearer ? graphTokens.get(bearer) : undefined;
      if (tenant === undefined) return json(res, 401, { error: { code: "InvalidAuthenticationToken", message: "Access token is empty." } });
      const groupIds = Array.isArray(body.groupIds) ? body.groupIds.map(String) : [];
      if (groupIds.length === 0 || groupIds.length > 20) return json(res, 400, { error: { code: "Request_BadRequest", message: "groupIds" } });
      const objectId = decodeURIComponent(check[1]);
      graphChecks.push({ objectId, tenant, groupIds });
      const status = graphFailures.shift();
      if (status) return json(res, status, { error: { code: "Authorization_RequestDenied", message: "Insufficient privileges to complete the operation." } });
      const member = new Set(options.groupMembers?.[objectId] ?? []);
      return json(res, 200, {
        "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#Collection(Edm.String)",
        value: groupIds.filter((g) => member.has(g)),
      });
    }
    const user = /^\/graph\/v1\.0\/users\/([^/]+)$/.exec(url.pathname);
    if (req.method === "GET" && user) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      const tenant = bearer ? graphTokens.get(bearer) : undefined;
      if (tenant === undefined) return json(res, 401, { error: { code: "InvalidAuthenticationToken", message: "Access token is empty." } });
      const objectId = decodeURIComponent(user[1]);
      const select = url.searchParams.get("$select");
      userTypeReads.push({ objectId, tenant, select });
      const status = userReadFailures.shift();
      if (status) return json(res, status, { error: { code: "Authorization_RequestDenied", message: "Insufficient privileges to complete the operation." } });
      const userType = Object.hasOwn(options.userTypes ?? {}, objectId) ? options.userTypes?.[objectId] : "Member";
      // As Graph: `$select` answers the selected properties and the id, nothing else.
      return json(res, 200, {
        "@odata.context": `https://graph.microsoft.com/v1.0/$metadata#users(${select ?? ""})/$entity`,
        ...(select === "userType" ? { userType } : { displayName: "Someone" }),
        id: objectId,
      });
    }
    const reply = /^\/v3\/conversations\/([^/]+)\/activities\/([^/]+)$/.exec(url.pathname);
    if (req.method === "POST" && reply) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      const body = await readText(req);
      if (!bearer || !issued.has(bearer)) return json(res, 401, { message: "Authorization has been denied for this request." });
      const status = failures.shift();
      if (status) return json(res, status, { error: { code: "ServiceError", message: "failure requested by the test" } });
      const activity = JSON.parse(body) as Record<string, unknown>;
      const refused = checkStreaming(activity, streams, options.streaming ?? false);
      if (refused) return json(res, refused.status, { error: { code: refused.code, message: "refused as Teams refuses it" } });
      replies.push({ conversationId: decodeURIComponent(reply[1]), activityId: decodeURIComponent(reply[2]), activity });
      arrivals.push(performance.now());
      const id = `reply-${replies.length}`;
      trackStreaming(activity, id, streams);
      return json(res, 200, { id });
    }
    json(res, 404, { error: "not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    serviceUrl: `${base}/`,
    tokenUrl: `${base}/{tenant}/oauth2/v2.0/token`,
    graphUrl: `${base}/graph/v1.0/`,
    graphChecks,
    failNextGraphCheck: (status) => void graphFailures.push(status),
    userTypeReads,
    failNextUserRead: (status) => void userReadFailures.push(status),
    replies,
    arrivals,
    tokenRequests,
    revokeTokens: () => issued.clear(),
    failNextReply: (status) => void failures.push(status),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Clients keep connections alive; close them so the server stops at once.
        server.closeAllConnections();
      }),
  };
}
