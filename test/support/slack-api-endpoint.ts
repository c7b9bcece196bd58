import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One `chat.postMessage` the endpoint accepted. */
export interface RecordedSlackPost {
  channel: string;
  threadTs?: string;
  text: string;
  ts: string;
  /** Block Kit blocks, when the post had any. */
  blocks?: unknown[];
}

/** One post to an interaction's `response_url` (served under `/actions/`). */
export interface RecordedSlackResponse {
  path: string;
  body: Record<string, unknown>;
}

/** One streaming message (`chat.startStream` … `chat.stopStream`) as the endpoint assembled it. */
export interface RecordedSlackStream {
  channel: string;
  threadTs: string;
  ts: string;
  recipientTeamId?: string;
  recipientUserId?: string;
  /** `markdown_text` of each call, in order: start, appends, stop. */
  pieces: string[];
  stopped: boolean;
  /** When (`performance.now()`) `chat.startStream` arrived: the first text the user sees. */
  startedAt: number;
}

/** One `views.open` the endpoint accepted: the trigger it exchanged and the view. */
export interface RecordedSlackView {
  triggerId: string;
  view: Record<string, unknown>;
}

/** One `chat.update` of a posted message. */
export interface RecordedSlackUpdate {
  channel: string;
  ts: string;
  text: string;
  /** As sent: an empty array removes the message's blocks; absent keeps them. */
  blocks?: unknown[];
}

/** One `assistant.threads.setStatus`. */
export interface RecordedSlackStatus {
  channelId: string;
  threadTs: string;
  status: string;
}

export interface SlackApiEndpoint {
  /** Base URL for `WebClient`'s `slackApiUrl` (ends in `/api/`). */
  slackApiUrl: string;
  posts: RecordedSlackPost[];
  streams: RecordedSlackStream[];
  statuses: RecordedSlackStatus[];
  views: RecordedSlackView[];
  updates: RecordedSlackUpdate[];
  /** Posts to `response_url`s: `{url}actions/<id>` is one the tests can put in an interaction payload. */
  responses: RecordedSlackResponse[];
  /** Every call, authorised or not, by Web API method name. */
  calls: { method: string; authorized: boolean }[];
  /** The next `chat.postMessage` answers `{ok: false, error}`, as Slack does for a refused call. */
  failNextPost(error: string): void;
  /** The next `usergroups.users.list` answers `{ok: false, error}` (`missing_scope` for a bot without `usergroups:read`). */
  failNextGroupList(error: string): void;
  close(): Promise<void>;
}

export interface SlackApiEndpointOptions {
  botToken: string;
  teamId?: string;
  botUserId?: string;
  botId?: string;
  /** Members of each user group, for `usergroups.users.list`; a group not listed answers `no_such_subteam`. */
  userGroups?: Record<string, string[]>;
  /**
   * Whether the app may stream (`chat.startStream`); otherwise Slack's refusal
   * (`channel_type_not_supported`) answers it, as in a workspace where the app cannot. Default: false.
   */
  streaming?: boolean;
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if ((req.headers["content-type"] ?? "").startsWith("application/json")) return text ? JSON.parse(text) : {};
  return Object.fromEntries(new URLSearchParams(text));
}

function send(res: ServerResponse, body: unknown): void {
  // Slack answers refused calls with HTTP 200 and `ok: false`.
  res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
}

/**
 * The part of the Slack Web API the replier, the group directory and the edit modal use
 * (`auth.test`, `chat.postMessage`, `chat.update`, `views.open`, `usergroups.users.list`), on
 * loopback. It checks the bearer bot token as Slack does and records every post.
 */
export async function startSlackApiEndpoint(options: SlackApiEndpointOptions): Promise<SlackApiEndpoint> {
  const teamId = options.teamId ?? "T0TEST";
  const botUserId = options.botUserId ?? "U0BOT";
  const posts: RecordedSlackPost[] = [];
  const streams: RecordedSlackStream[] = [];
  const statuses: RecordedSlackStatus[] = [];
  const views: RecordedSlackView[] = [];
  const updates: RecordedSlackUpdate[] = [];
  const exchangedTriggers = new Set<string>();
  const responses: RecordedSlackResponse[] = [];
  const calls: { method: string; authorized: boolean }[] = [];
  const pendingFailures: string[] = [];
  const groupListFailures: string[] = [];
  let seq = 0;

  const server = createServer(async (req, res) => {
    const method = (req.url ?? "").replace(/^\/api\//, "").split("?")[0];
    const body = await readBody(req);
    // A response_url carries its own secret in the path, not the bot token.
    if ((req.url ?? "").startsWith("/actions/")) {
      responses.push({ path: req.url ?? "", body });
      return send(res, { ok: true });
    }
    const authorized = req.headers.authorization === `Bearer ${options.botToken}`;
    calls.push({ method, authorized });
    if (!authorized) return send(res, { ok: false, error: "invalid_auth" });
    if (method === "auth.test") {
      return send(res, {
        ok: true,
        url: "https://test.slack.invalid/",
        team: "Test",
        user: "threadwise",
        team_id: teamId,
        user_id: botUserId,
        bot_id: options.botId ?? "B0BOT",
      });
    }
    if (method === "chat.postMessage") {
      const failure = pendingFailures.shift();
      if (failure) return send(res, { ok: false, error: failure });
      if (typeof body.channel !== "string" || !body.channel) return send(res, { ok: false, error: "channel_not_found" });
      if (typeof body.text !== "string" || !body.text) return send(res, { ok: false, error: "no_text" });
      seq += 1;
      const ts = `1700000000.${String(seq).padStart(6, "0")}`;
      const blocks = typeof body.blocks === "string" ? (JSON.parse(body.blocks) as unknown[]) : Array.isArray(body.blocks) ? body.blocks : undefined;
      posts.push({
        channel: body.channel,
        threadTs: typeof body.thread_ts === "string" ? body.thread_ts : undefined,
        text: body.text,
        ts,
        ...(blocks && { blocks }),
      });
      return send(res, { ok: true, channel: body.channel, ts, message: { text: body.text, ts, thread_ts: body.thread_ts } });
    }
    if (method === "views.open") {
      // As Slack: a trigger is exchanged once; a modal with an input needs a submit; title and submit are plain text of at most 24 characters.
      const triggerId = body.trigger_id;
      if (typeof triggerId !== "string" || !/^\d+\.\d+\.[0-9a-f]+$/.test(triggerId)) return send(res, { ok: false, error: "invalid_trigger_id" });
      if (exchangedTriggers.has(triggerId)) return send(res, { ok: false, error: "exchanged_trigger_id" });
      const view = (typeof body.view === "string" ? JSON.parse(body.view) : body.view) as Record<string, unknown> | undefined;
      const blocks = Array.isArray(view?.blocks) ? (view.blocks as { type?: string }[]) : [];
      const plain = (t: unknown) =>
        (t as { type?: string; text?: string } | undefined)?.type === "plain_text" && ((t as { text: string }).text ?? "").length <= 24;
      const hasInput = blocks.some((b) => b.type === "input");
      if (view?.type !== "modal" || !plain(view.title) || (hasInput && !plain(view.submit)) || String(view.private_metadata ?? "").length > 3_000) {
        return send(res, { ok: false, error: "invalid_arguments" });
      }
      exchangedTriggers.add(triggerId);
      views.push({ triggerId, view });
      return send(res, { ok: true, view: { id: `V${views.length}`, team_id: teamId, ...view } });
    }
    if (method === "chat.update") {
      const post = posts.find((p) => p.channel === body.channel && p.ts === body.ts);
      if (!post) return send(res, { ok: false, error: "message_not_found" });
      if (typeof body.text !== "string" || !body.text) return send(res, { ok: false, error: "no_text" });
      const blocks = typeof body.blocks === "string" ? (JSON.parse(body.blocks) as unknown[]) : Array.isArray(body.blocks) ? body.blocks : undefined;
      updates.push({ channel: post.channel, ts: post.ts, text: body.text, ...(blocks && { blocks }) });
      return send(res, { ok: true, channel: post.channel, ts: post.ts, text: body.text });
    }
    if (method === "assistant.threads.setStatus") {
      if (typeof body.channel_id !== "string" || typeof body.thread_ts !== "string" || typeof body.status !== "string") {
        return send(res, { ok: false, error: "invalid_arguments" });
      }
      statuses.push({ channelId: body.channel_id, threadTs: body.thread_ts, status: body.status });
      return send(res, { ok: true });
    }
    if (method === "chat.startStream") {
      if (!options.streaming) return send(res, { ok: false, error: "channel_type_not_supported" });
      if (typeof body.channel !== "string" || !body.channel) return send(res, { ok: false, error: "channel_not_found" });
      const text = body.markdown_text;
      if (text !== undefined && (typeof text !== "string" || text.length > 12_000)) return send(res, { ok: false, error: "invalid_arguments" });
      // Outside a DM a stream names who receives it, and both fields go together.
      const inDm = body.channel.startsWith("D");
      if (!inDm && (typeof body.recipient_team_id !== "string" || typeof body.recipient_user_id !== "string")) {
        return send(res, { ok: false, error: "invalid_arguments" });
      }
      if (typeof body.thread_ts !== "string") return send(res, { ok: false, error: "invalid_arguments" });
      seq += 1;
      const ts = `1700000000.${String(seq).padStart(6, "0")}`;
      streams.push({
        channel: body.channel,
        threadTs: body.thread_ts,
        ts,
        ...(inDm ? {} : { recipientTeamId: body.recipient_team_id as string, recipientUserId: body.recipient_user_id as string }),
        pieces: typeof text === "string" ? [text] : [],
        stopped: false,
        startedAt: performance.now(),
      });
      return send(res, { ok: true, channel: body.channel, ts });
    }
    if (method === "chat.appendStream" || method === "chat.stopStream") {
      const stream = streams.find((s) => s.channel === body.channel && s.ts === body.ts);
      if (!stream) return send(res, { ok: false, error: "message_not_found" });
      if (stream.stopped) return send(res, { ok: false, error: "message_not_in_streaming_state" });
      const text = body.markdown_text;
      const required = method === "chat.appendStream";
      if ((required && typeof text !== "string") || (text !== undefined && (typeof text !== "string" || text.length > 12_000))) {
        return send(res, { ok: false, error: "invalid_arguments" });
      }
      if (typeof text === "string") stream.pieces.push(text);
      if (method === "chat.stopStream") stream.stopped = true;
      return send(res, { ok: true, channel: stream.channel, ts: stream.ts });
    }
    if (method === "usergroups.users.list") {
      const failure = groupListFailures.shift();
      if (failure) return send(res, { ok: false, error: failure });
      if (body.team_id !== undefined && body.team_id !== teamId) return send(res, { ok: false, error: "team_not_found" });
      const users = typeof body.usergroup === "string" && options.userGroups ? options.userGroups[body.usergroup] : undefined;
      return send(res, users ? { ok: true, users } : { ok: false, error: "no_such_subteam" });
    }
    return send(res, { ok: false, error: "unknown_method" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    slackApiUrl: `http://127.0.0.1:${port}/api/`,
    posts,
    streams,
    statuses,
    views,
    updates,
    responses,
    calls,
    failNextPost: (error) => void pendingFailures.push(error),
    failNextGroupList: (error) => void groupListFailures.push(error),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Clients keep connections alive; close them so the server stops at once.
        server.closeAllConnections();
      }),
  };
}
