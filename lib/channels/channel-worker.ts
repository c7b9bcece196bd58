import type { TurnRunner } from "../agent/turn-runner.js";
import { ChannelRoles } from "../auth/channel-roles.js";
import type { ChannelEndpointsConfig } from "../config/channels-config.js";
import type { Config } from "../config/config.js";
import type { ChannelReplyCredentials } from "../config/credentials.js";
import { TurnJobWorker } from "../queue/turn-job-worker.js";
import type { TurnMetricsSink } from "../queue/turn-metrics.js";
import type { ConversationStore } from "../store/conversation-store.js";
import type { TurnStore } from "../store/turn-store.js";
import type { ApprovalStore } from "../store/approval-store.js";
import { createChannelReplier } from "./channel-replier.js";
import { createGroupDirectories } from "./group-directories.js";
import type { Limits } from "../limits/limits.js";
import type { TurnAdmission } from "../limits/turn-admission.js";

/**
 * The worker half of the channel side, assembled here once for the worker function and the local
 * server's in-process queue (the ingress half is `channel-routes.ts`).
 */

export interface ChannelWorkerOptions {
  /** The app's turn runner and stores (`createApp`). */
  app: {
    runner: TurnRunner;
    database: { conversations: ConversationStore; turns: TurnStore; approvals: ApprovalStore };
    limits?: Limits;
    admission?: TurnAdmission;
  };
  /** The channels it can answer in (a job from another is told nothing and given up), and whose groups it can look up. */
  replies: ChannelReplyCredentials;
  endpoints: ChannelEndpointsConfig;
  /** The roles of Slack and Teams users and of their groups (`SLACK_ROLES`, `TEAMS_ROLES`). */
  channelRoles: Config["auth"]["channelRoles"];
  maxReceives: number;
  maxMessageChars: number;
  onTurnCompleted?: TurnMetricsSink;
}

/**
 * The worker of queued turns (the worker function's logic, and the local server's in-process
 * queue). Its repliers hold HTTP clients and a token cache: make it once per container and
 * credentials version, not per turn.
 */
export function channelWorker(options: ChannelWorkerOptions): TurnJobWorker {
  return new TurnJobWorker({
    runner: options.app.runner,
    conversations: options.app.database.conversations,
    turns: options.app.database.turns,
    replier: createChannelReplier(options.replies, options.endpoints),
    roles: new ChannelRoles(options.channelRoles, createGroupDirectories(options.replies, options.endpoints)),
    maxReceives: options.maxReceives,
    maxMessageChars: options.maxMessageChars,
    onTurnCompleted: options.onTurnCompleted,
    approvals: options.app.database.approvals,
    admission: options.app.admission,
    limits: options.app.limits,
  });
}

/** The settings the worker is made from: the channels' endpoints, their users' roles, its receives and message limit. */
export type ChannelWorkerConfig = Pick<Config, "channels" | "maxMessageChars"> & {
  auth: Pick<Config["auth"], "channelRoles">;
  deployment: Pick<Config["deployment"], "turnMaxReceives">;
};

/**
 * The worker as every deployment makes it (the worker function, the local server's queue): its
 * settings from the configuration, the app and the channels it can answer in from the caller.
 */
export function channelWorkerFor(
  config: ChannelWorkerConfig,
  app: ChannelWorkerOptions["app"],
  replies: ChannelReplyCredentials,
  onTurnCompleted?: TurnMetricsSink,
): TurnJobWorker {
  return channelWorker({
    app,
    replies,
    endpoints: config.channels,
    channelRoles: config.auth.channelRoles,
    maxReceives: config.deployment.turnMaxReceives,
    maxMessageChars: config.maxMessageChars,
    onTurnCompleted,
  });
}
