import { ChannelAuthenticationError, ValidationError, type ChannelAuthenticationReason } from "../../errors.js";
import { enqueueOnce, type EventDeduper } from "../channel-event-deduper.js";
import { emptyResponse, eventInFlightResponse, jsonResponse, type ChannelRequest, type ChannelResponse } from "../channel-http.js";
import type { EnqueueTurn } from "../../queue/turn-job.js";
import { parseTeamsActivity, teamsTurnJob, type TeamsDelivery, type TeamsIgnoreReason } from "./teams-activity.js";
import { verifyBotFrameworkRequest } from "./verify-bot-framework-request.js";
import { teamsIdentityOf } from "./teams-identity.js";
import type { ChannelApprovals } from "../channel-decisions.js";
import { handleTeamsApprovalAction, isApprovalAction } from "./handle-teams-approval-action.js";

/** What became of one activity; for logs and metrics (reasons, never text). */
export type TeamsActivityOutcome =
  | { kind: "rejected"; reason: ChannelAuthenticationReason }
  | { kind: "invalid" }
  | { kind: "ignored"; reason: TeamsIgnoreReason }
  | { kind: "duplicate" }
  | { kind: "in_flight" }
  | { kind: "enqueued" }
  | { kind: "approval-action" };

export interface HandleTeamsActivityInput {
  request: ChannelRequest;
  /** The bot's Microsoft App ID. */
  appId: string;
  deduper: EventDeduper;
  enqueue: EnqueueTurn;
  /** Default: the Bot Framework's (see `verifyBotFrameworkRequest`). */
  openIdMetadataUrl?: string;
  /** Default: the Bot Framework's (see `verifyBotFrameworkRequest`). */
  issuer?: string;
  /** Where a stand-in Bot Connector serves (`TEAMS_SERVICE_URL_ORIGIN`). Default: Teams' own hosts. */
  serviceUrlOrigin?: string;
  /** Default: the current time. */
  now?: Date;
  onOutcome?: (outcome: TeamsActivityOutcome) => void;
  /** Answers approval card actions (`adaptiveCard/action` invokes) when set. Default: they are ignored. */
  approvals?: ChannelApprovals;
}

function invalid(message: string): ChannelResponse {
  return jsonResponse(400, { error: { code: "invalid_request", message } });
}

/**
 * Authenticates, parses, dedupes and enqueues one Bot Framework activity and answers at once:
 * 202 for an enqueued message, 200 for anything ignored or already seen, 401 for a message or
 * card action that names no Entra user and tenant (`teamsIdentityOf`). The answer itself
 * goes out later through the Bot Connector (`TeamsReplier`).
 *
 * `ServiceUnavailableError` (signing keys unreachable) and enqueue failures are rethrown for
 * the adapter to answer 5xx; the Bot Framework then retries.
 */
export async function handleTeamsActivity(input: HandleTeamsActivityInput): Promise<ChannelResponse> {
  const report = input.onOutcome ?? (() => undefined);
  const now = input.now ?? new Date();
  let body: unknown;
  try {
    body = JSON.parse(input.request.rawBody);
  } catch {
    report({ kind: "invalid" });
    return invalid("body is not JSON");
  }

  try {
    await verifyBotFrameworkRequest({
      headers: input.request.headers,
      body,
      appId: input.appId,
      openIdMetadataUrl: input.openIdMetadataUrl,
      issuer: input.issuer,
      serviceUrlOrigin: input.serviceUrlOrigin,
      now,
    });
  } catch (error) {
    if (!(error instanceof ChannelAuthenticationError)) throw error;
    report({ kind: "rejected", reason: error.reason });
    return jsonResponse(401, { error: { code: "unauthenticated", message: "invalid bot framework token" } });
  }
  const refused = () => {
    report({ kind: "rejected", reason: "no_identity" });
    return jsonResponse(401, { error: { code: "unauthenticated", message: "the activity names no Entra user and tenant" } });
  };

  if (input.approvals && isApprovalAction(body)) {
    if (teamsIdentityOf(body).kind === "refused") return refused();
    report({ kind: "approval-action" });
    return handleTeamsApprovalAction(body, input.approvals);
  }

  let delivery: TeamsDelivery;
  try {
    delivery = parseTeamsActivity(body);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    report({ kind: "invalid" });
    return invalid(error.message);
  }
  if (delivery.kind === "refused") return refused();
  if (delivery.kind === "ignore") {
    report({ kind: "ignored", reason: delivery.reason });
    return emptyResponse(200);
  }

  const job = teamsTurnJob(delivery.message, now);
  const kind = await enqueueOnce(job, input.deduper, input.enqueue, now);
  report({ kind });
  if (kind === "in_flight") return eventInFlightResponse();
  return emptyResponse(kind === "enqueued" ? 202 : 200);
}
