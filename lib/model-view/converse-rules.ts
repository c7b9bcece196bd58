/** The Bedrock Converse rules a view must satisfy; `InvalidModelViewError.rule` is one of these. */
export const CONVERSE_RULES = {
  notEmpty: "not-empty",
  systemFirst: "system-first",
  knownMessageType: "known-message-type",
  firstMessageUser: "first-message-user",
  lastMessageUser: "last-message-user",
  rolesAlternate: "roles-alternate",
  noEmptyContent: "no-empty-content",
  noBlankText: "no-blank-text",
  toolUseId: "tool-use-id",
  toolIdsUnique: "tool-ids-unique",
  toolUseAnswered: "tool-use-answered",
  toolResultHasUse: "tool-result-has-use",
  toolConfigPresent: "tool-config-present",
  cachePointLimit: "cache-point-limit",
} as const;

export type ConverseRule = (typeof CONVERSE_RULES)[keyof typeof CONVERSE_RULES];
