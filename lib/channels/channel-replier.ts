import { ChannelDeliveryError } from "../errors.js";
import type { SlackReplier } from "./slack/slack-replier.js";
import type { TeamsReplier } from "./teams/teams-replier.js";
import type { TurnJob } from "./turn-job.js";

export interface ChannelRepliers {
  slack?: SlackReplier;
  teams?: TeamsReplier;
}

/**
 * Sends a turn's answer, or its failure message, back to where the turn came from. The
 * worker's one entry point for replies; API turns are answered by the API response instead.
 */
export class ChannelReplier {
  constructor(private readonly repliers: ChannelRepliers) {}

  async reply(job: TurnJob, text: string): Promise<void> {
    if (job.channel === "slack") await this.slack().reply(job.replyTo, text);
    else if (job.channel === "teams") await this.teams().reply(job.replyTo, text);
  }

  async replyFailure(job: TurnJob, error: unknown): Promise<void> {
    if (job.channel === "slack") await this.slack().replyFailure(job.replyTo, error);
    else if (job.channel === "teams") await this.teams().replyFailure(job.replyTo, error);
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
