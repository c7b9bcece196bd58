import { z } from "zod";

/** Why a Slack event names nobody whose workspace we know. */
export const SLACK_IDENTITY_REFUSALS = {
  /** A message in a Slack Connect channel that names neither the user's team (`user_team`) nor the team it came from (`source_team`). */
  unknownTeam: "unknown_team",
} as const;
export type SlackIdentityRefusal = (typeof SLACK_IDENTITY_REFUSALS)[keyof typeof SLACK_IDENTITY_REFUSALS];

/** The fields of a signed Events API delivery that say who wrote it. */
export interface SlackIdentityFields {
  /** The envelope's `team_id`: the workspace the app is installed in, which owns the conversation. */
  teamId: string;
  /** The event's `user`. */
  userId: string;
  /** The envelope's `is_ext_shared_channel`: a Slack Connect channel (or DM), shared with other organisations. */
  isExtSharedChannel?: unknown;
  /** The event's `user_team`: the user's own team. */
  userTeam?: unknown;
  /** The event's `source_team`: the team the message was posted from. */
  sourceTeam?: unknown;
}

/**
 * Who wrote a Slack message: their own team and user id. `hostTeam` is the workspace the app is installed in;
 * `guest` is true for a user of another organisation in a shared channel, who gets no host defaults.
 */
export type SlackIdentity =
  | { kind: "user"; team: string; userId: string; hostTeam: string; guest: boolean }
  | { kind: "refused"; reason: SlackIdentityRefusal };

const teamId = z.string().regex(/^[A-Z0-9]{1,64}$/);

/**
 * A Slack user's workspace, from what Slack sends. Outside Slack Connect everyone who can post is
 * the host workspace's (its members and its own guests), so the team is the envelope's `team_id`.
 * In a channel shared with other organisations (`is_ext_shared_channel`) the user's team is their
 * own: `user_team`, else `source_team` (the team the message came from), as Slack's Events API
 * documents them for shared channels; a message that names neither is refused rather than taken
 * for the host's. Pure and total: every input gives one identity or one refusal.
 */
export function slackIdentityOf(fields: SlackIdentityFields): SlackIdentity {
  if (fields.isExtSharedChannel !== true) return { kind: "user", team: fields.teamId, userId: fields.userId, hostTeam: fields.teamId, guest: false };
  const own = [fields.userTeam, fields.sourceTeam].map((t) => teamId.safeParse(t)).find((t) => t.success)?.data;
  if (own === undefined) return { kind: "refused", reason: SLACK_IDENTITY_REFUSALS.unknownTeam };
  return { kind: "user", team: own, userId: fields.userId, hostTeam: fields.teamId, guest: own !== fields.teamId };
}
