import { slackPrincipal, tenantOwner } from "../../lib/auth/principal.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";

/** The job of a Slack mention by U1 in thread 1700000000.000100 of channel C1 (workspace T1), with `overrides` in its place. */
export function sampleSlackJob(overrides: Partial<TurnJob> = {}): TurnJob {
  return {
    channel: "slack",
    conversationKey: "T1:C1:1700000000.000100",
    principal: slackPrincipal("T1", "U1"),
    owner: tenantOwner("slack", "T1"),
    readScope: "slack:T1:C1",
    content: "hi",
    dedupeId: "Ev001",
    receivedAt: new Date(0).toISOString(),
    replyTo: { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" },
    ...overrides,
  } as TurnJob;
}
