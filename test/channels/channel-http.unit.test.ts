import { describe, expect, it } from "vitest";
import { channelNotConfiguredResponse, emptyResponse, jsonResponse } from "../../lib/channels/channel-http.js";

describe("channel responses", () => {
  it("returns JSON with its content type", () => {
    expect(jsonResponse(200, { ok: true })).toEqual({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":true}' });
  });

  it("returns an empty answer with no headers", () => {
    expect(emptyResponse(202)).toEqual({ status: 202, headers: {}, body: "" });
  });

  it("returns 503 channel_not_configured saying what to set, so the channel retries once it is", () => {
    const response = channelNotConfiguredResponse("slack", "set slackSigningSecret in the slack-signing secret");
    expect(response.status).toBe(503);
    expect(JSON.parse(response.body)).toEqual({
      error: { code: "channel_not_configured", message: "slack is not configured: set slackSigningSecret in the slack-signing secret" },
    });
  });
});
