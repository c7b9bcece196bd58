/** Events API bodies shaped as Slack sends them (fields trimmed to those that matter). */

export const TEAM = "T0TEST";
export const BOT_USER = "U0BOT";
export const USER = "U0ALICE";
export const CHANNEL = "C0GENERAL";
export const DM = "D0ALICE";

let counter = 0;
export function nextEventId(): string {
  counter += 1;
  return `Ev0TEST${String(counter).padStart(6, "0")}`;
}

export function envelope(event: Record<string, unknown>, eventId = nextEventId()): string {
  return JSON.stringify({
    token: "deprecated-verification-token",
    team_id: TEAM,
    api_app_id: "A0APP",
    event,
    type: "event_callback",
    event_id: eventId,
    event_time: 1_700_000_000,
    authorizations: [{ enterprise_id: null, team_id: TEAM, user_id: BOT_USER, is_bot: true, is_enterprise_install: false }],
    is_ext_shared_channel: false,
  });
}

export function appMention(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "app_mention",
    user: USER,
    text: `<@${BOT_USER}> what were last month's sales?`,
    ts: "1700000100.000200",
    channel: CHANNEL,
    event_ts: "1700000100.000200",
    team: TEAM,
    ...overrides,
  };
}

export function directMessage(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "message",
    channel_type: "im",
    user: USER,
    text: "and the month before?",
    ts: "1700000200.000300",
    channel: DM,
    event_ts: "1700000200.000300",
    team: TEAM,
    ...overrides,
  };
}
