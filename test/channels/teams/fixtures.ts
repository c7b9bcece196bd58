/** Bot Framework activities shaped as Teams sends them (fields trimmed to those that matter). */

export const TENANT = "72f988bf-0000-4000-8000-00000000aa01";
export const BOT_ACCOUNT = "28:00000000-0000-4000-8000-0000000000b0";
export const USER_ACCOUNT = "29:1AbCdEfUserAccount";
export const USER_AAD = "6f0c0000-0000-4000-8000-0000000000a1";
export const PERSONAL_CONVERSATION = "a:1PersonalChatWithThreadwise";
export const CHANNEL_THREAD = "19:abcdef0123456789@thread.tacv2;messageid=1700000000123";

let counter = 0;

export function messageActivity(serviceUrl: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter += 1;
  return {
    type: "message",
    id: `1700000000${String(counter).padStart(3, "0")}`,
    timestamp: "2026-03-01T12:00:00.000Z",
    serviceUrl,
    channelId: "msteams",
    from: { id: USER_ACCOUNT, name: "Alice", aadObjectId: USER_AAD },
    conversation: { conversationType: "personal", tenantId: TENANT, id: PERSONAL_CONVERSATION },
    recipient: { id: BOT_ACCOUNT, name: "Threadwise" },
    textFormat: "plain",
    locale: "en-US",
    text: "what were last month's sales?",
    entities: [{ type: "clientInfo", locale: "en-US", country: "US", platform: "Web" }],
    channelData: { tenant: { id: TENANT } },
    ...overrides,
  };
}

/** A message in a Teams channel thread, where the bot must be @mentioned. */
export function channelMention(serviceUrl: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return messageActivity(serviceUrl, {
    conversation: { isGroup: true, conversationType: "channel", tenantId: TENANT, id: CHANNEL_THREAD },
    text: "<at>Threadwise</at> and the month before?",
    entities: [{ type: "mention", text: "<at>Threadwise</at>", mentioned: { id: BOT_ACCOUNT, name: "Threadwise" } }],
    channelData: { teamsChannelId: "19:abcdef0123456789@thread.tacv2", teamsTeamId: "19:team@thread.tacv2", tenant: { id: TENANT } },
    ...overrides,
  });
}
