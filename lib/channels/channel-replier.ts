import type { ChannelEndpointsConfig } from "../config/channels-config.js";
import type { ChannelReplyCredentials } from "../config/credentials.js";
import { ChannelDeliveryError } from "../errors.js";
import { modelBusyNotice } from "./failure-message.js";
import { SlackReplier } from "./slack/slack-replier.js";
import { BotConnectorTokenProvider } from "./teams/bot-connector-token-provider.js";
import { TeamsReplier } from "./teams/teams-replier.js";
import type { ApprovalRequestItem, TurnAnswerStream, TurnJob, TurnReplier } from "../queue/turn-job.js";

export interface ChannelRepliers {
  slack?: SlackReplier;
  teams?: TeamsReplier;
}

/**
 * Sends a turn's answer, or its failure message, back to where the turn came from. The
 * worker's one entry point for replies; API turns are answered by the API response instead.
 */
export class ChannelReplier implements TurnReplier {
  constructor(private readonly repliers: ChannelRepliers) {}

  async reply(job: TurnJob, text: string): Promise<void> {
    if (job.channel === "slack") await this.slack().reply(job.replyTo, text);
    else if (job.channel === "teams") await this.teams().reply(job.replyTo, text);
  }

  /** Asks in the thread for decisions on a turn's waiting calls: Slack buttons, a Teams Adaptive Card. */
  async requestApproval(job: TurnJob, conversationId: string, approvals: readonly ApprovalRequestItem[]): Promise<void> {
    if (job.channel === "slack") await this.slack().requestApproval(job.replyTo, conversationId, approvals);
    else if (job.channel === "teams") await this.teams().requestApproval(job.replyTo, conversationId, approvals);
  }

  /** "Busy, I will answer in a moment" in the thread, as a plain reply. */
  async noticeBusy(job: TurnJob): Promise<void> {
    if (job.channel === "slack" || job.channel === "teams") await this.reply(job, modelBusyNotice());
  }

  async replyFailure(job: TurnJob, error: unknown): Promise<void> {
    if (job.channel === "slack") await this.slack().replyFailure(job.replyTo, error);
    else if (job.channel === "teams") await this.teams().replyFailure(job.replyTo, error);
  }

  /**
   * A stream of the turn's answer where the channel can show one (Slack threads; Teams 1:1 chats),
   * else undefined: the answer goes by `reply`. `claimStream` is true for one attempt per turn.
   */
  openStream(job: TurnJob, claimStream: () => Promise<boolean>): TurnAnswerStream | undefined {
    if (job.channel === "slack") return this.slack().openStream(job.replyTo, job.principal.subject, claimStream);
    if (job.channel === "teams") return this.teams().openStream(job.replyTo, claimStream);
    return undefined;
  }

  private slack(): SlackReplier {
    if (!this.repliers.slack) throw new ChannelDeliveryError("slack is not configured", "slack");
    return this.repliers.slack;
  }

  private teams(): TeamsReplier {
    if (!this.repliers.teams) throw new ChannelDeliveryError("teams is not configured", "teams");
    return this.repliers.teams;
  }
}

/**
 * The repliers of the connected channels. They hold HTTP clients and a token cache: make them
 * once per container (and per credentials version), not per turn.
 */
export function createChannelReplier(channels: ChannelReplyCredentials, endpoints: ChannelEndpointsConfig = {}): ChannelReplier {
  const { slack, teams } = channels;
  return new ChannelReplier({
    slack: slack ? new SlackReplier({ botToken: slack.botToken, slackApiUrl: endpoints.slackApiUrl }) : undefined,
    teams: teams
      ? new TeamsReplier({
          tokens: new BotConnectorTokenProvider({
            appId: teams.appId,
            appPassword: teams.appPassword,
            tenant: teams.tenantId,
            tokenUrl: endpoints.teamsTokenUrl,
          }),
        })
      : undefined,
  });
}
