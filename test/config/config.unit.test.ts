import { describe, expect, it } from "vitest";
import { DEFAULT_MODEL_PRICES, priceOf } from "../../lib/config/model-config.js";
import {
  DEFAULT_PROMPT_CACHE_MIN_TOKENS,
  DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
  DEFAULT_VIEW_TOKEN_MARGIN,
  DEFAULT_VIEW_TOKEN_MARGIN_MIN,
} from "../../lib/config/view-config.js";
import { loadConfig } from "../../lib/config/config.js";
import { ValidationError } from "../../lib/errors.js";

function refusal(env: Record<string, string>): ValidationError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("the configuration was accepted");
}

describe("config", () => {
  describe("loadConfig", () => {
    it("returns no channel roles when SLACK_ROLES and TEAMS_ROLES are unset", () => {
      expect(loadConfig({}).auth.channelRoles).toEqual({ slack: {}, teams: {} });
    });

    it("returns the roles of Slack and Teams users by workspace and tenant", () => {
      const config = loadConfig({
        SLACK_ROLES: '{"T0123": {"default": ["viewer"], "users": {"U0ALICE": ["analyst"]}}}',
        TEAMS_ROLES: '{"72f988bf-0000-4000-8000-00000000aa01": {"users": {"6f0c0000-0000-4000-8000-0000000000a1": ["analyst"]}}}',
      });
      expect(config.auth.channelRoles.slack).toEqual({ T0123: { default: ["viewer"], users: { U0ALICE: ["analyst"] } } });
      expect(Object.keys(config.auth.channelRoles.teams)).toEqual(["72f988bf-0000-4000-8000-00000000aa01"]);
    });

    it("throws ValidationError naming the variable for roles that are not JSON or not role lists", () => {
      expect(refusal({ SLACK_ROLES: "T0123=analyst" }).details).toEqual([{ path: "SLACK_ROLES", message: "not JSON" }]);
      expect(refusal({ TEAMS_ROLES: '{"t1": {"users": {"u1": "analyst"}}}' }).details?.[0]?.path).toBe("TEAMS_ROLES.t1.users.u1");
    });

    it("throws ValidationError for a key it does not know, such as a misspelt groups, rather than ignoring it", () => {
      const error = refusal({ SLACK_ROLES: '{"T0123": {"group": {"S0FIN": ["finance"]}}}' });
      expect(error.details?.[0]?.path).toBe("SLACK_ROLES.T0123");
    });

    it("returns a Teams tenant's guest roles (TEAMS_ROLES' guest)", () => {
      const config = loadConfig({ TEAMS_ROLES: '{"tenant-1": {"default": ["analyst"], "guest": ["viewer"]}}' });
      expect(config.auth.channelRoles.teams["tenant-1"]).toEqual({ default: ["analyst"], guest: ["viewer"] });
    });

    it("throws ValidationError for guest in SLACK_ROLES, where a Connect guest is a user of their own team, rather than ignoring it", () => {
      const error = refusal({ SLACK_ROLES: '{"T0123": {"guest": ["viewer"]}}' });
      expect(error.details?.[0]?.path).toBe("SLACK_ROLES.T0123");
      expect(refusal({ TEAMS_ROLES: '{"tenant-1": {"guests": ["viewer"]}}' }).details?.[0]?.message).toContain('"guest": [..]');
    });

    it("returns group roles by Slack user group or Entra group id", () => {
      const config = loadConfig({ TEAMS_ROLES: '{"tenant-1": {"groups": {"9a000000-0000-4000-8000-00000000f1a0": ["finance"]}}}' });
      expect(config.auth.channelRoles.teams["tenant-1"].groups).toEqual({ "9a000000-0000-4000-8000-00000000f1a0": ["finance"] });
    });
  });

  describe("loadConfig (timers and the port)", () => {
    // Node runs a timer of more than 2^31 - 1 ms after 1 ms (a TimeoutOverflowWarning), so a generous
    // SYNC_TURN_DEADLINE_MS sent every turn to the worker at once and TOOL_TIMEOUT_MS timed every tool out.
    it.each([
      "SYNC_TURN_DEADLINE_MS",
      "TOOL_TIMEOUT_MS",
      "SQL_TIMEOUT_MS",
      "LEASE_TTL_MS",
      "MONGODB_SERVER_SELECTION_TIMEOUT_MS",
      "MONGODB_SOCKET_TIMEOUT_MS",
      "MONGODB_MAX_IDLE_TIME_MS",
    ])("throws ValidationError naming %s when it is longer than a Node.js timer holds", (name) => {
      expect(refusal({ [name]: "2147483648" }).details).toEqual([
        { path: name, message: "must be at most 2147483647 ms (about 24.8 days), the longest wait a Node.js timer holds" },
      ]);
    });

    it("returns the longest timeouts a Node.js timer holds", () => {
      const config = loadConfig({ SYNC_TURN_DEADLINE_MS: "2147483647", TOOL_TIMEOUT_MS: "2147483647", APPROVAL_SWEEP_SECONDS: "2147483" });
      expect([config.deployment.syncTurnDeadlineMs, config.tools.timeoutMs, config.approvalSweepSeconds]).toEqual([2_147_483_647, 2_147_483_647, 2_147_483]);
    });

    it("throws ValidationError for an APPROVAL_SWEEP_SECONDS whose milliseconds a Node.js timer cannot hold", () => {
      expect(refusal({ APPROVAL_SWEEP_SECONDS: "2147484" }).details?.[0]).toEqual({
        path: "APPROVAL_SWEEP_SECONDS",
        message: "must be at most 2147483 s (about 24.8 days), the longest wait a Node.js timer holds",
      });
    });

    it("returns the defaults for variables set blank (VIEW_FINISHED_TURNS= kept no finished turn, PORT= was refused as 0)", () => {
      const config = loadConfig({
        VIEW_FINISHED_TURNS: "",
        VIEW_TOKEN_MARGIN: "",
        PORT: "",
        MONGODB_URI: " ",
        TOOL_TIMEOUT_MS: "",
        AWS_REGION: "",
        BEDROCK_REGION: "",
      });
      expect([config.view.finishedTurns, config.view.tokenMargin.initial, config.port, config.mongodbUri, config.tools.timeoutMs]).toEqual([
        6,
        0.5,
        3000,
        undefined,
        20_000,
      ]);
    });

    it("throws ValidationError for a PORT above 65535 rather than failing to listen on it", () => {
      expect(refusal({ PORT: "70000" }).details?.[0]?.path).toBe("PORT");
      expect(loadConfig({ PORT: "65535" }).port).toBe(65_535);
    });
  });

  describe("loadConfig (model view, prompt cache, prices)", () => {
    describe("model view and prompt cache", () => {
      it("returns the defaults: history blocks, cache points with Bedrock's default TTL, the token margin", () => {
        const { view, model } = loadConfig({});
        expect(view).toMatchObject({
          historyBlockTurns: DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
          tokenMargin: { initial: DEFAULT_VIEW_TOKEN_MARGIN, min: DEFAULT_VIEW_TOKEN_MARGIN_MIN },
          promptCache: { enabled: true, minTokensPerCheckpoint: DEFAULT_PROMPT_CACHE_MIN_TOKENS, stableTtl: "5m", turnTtl: "5m" },
        });
        expect(model).toMatchObject({ prices: DEFAULT_MODEL_PRICES, countTokens: false });
      });

      it("returns the TTL policy, the margin and CountTokens as set", () => {
        const { view, model } = loadConfig({
          PROMPT_CACHE: "off",
          PROMPT_CACHE_STABLE_TTL: "1h",
          PROMPT_CACHE_TURN_TTL: "5m",
          VIEW_TOKEN_MARGIN: "0.3",
          VIEW_TOKEN_MARGIN_MIN: "0.05",
          BEDROCK_COUNT_TOKENS: "true",
        });
        expect(view.promptCache).toMatchObject({ enabled: false, stableTtl: "1h", turnTtl: "5m" });
        expect(view.tokenMargin).toEqual({ initial: 0.3, min: 0.05 });
        expect(model.countTokens).toBe(true);
      });

      it("throws ValidationError for a one-hour turn TTL after five-minute stable points, which Bedrock rejects", () => {
        expect(() => loadConfig({ PROMPT_CACHE_STABLE_TTL: "5m", PROMPT_CACHE_TURN_TTL: "1h" })).toThrow(ValidationError);
        expect(() => loadConfig({ PROMPT_CACHE_TURN_TTL: "1h" })).toThrow(ValidationError);
      });
    });

    describe("model prices", () => {
      it("returns MODEL_PRICES over the default table", () => {
        const custom = { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25, cacheWrite1h: 2 };
        const { prices } = loadConfig({ MODEL_PRICES: JSON.stringify({ "my.model-v1": custom }) }).model;
        expect(prices["my.model-v1"]).toEqual(custom);
        expect(prices["anthropic.claude-sonnet-4-20250514-v1:0"]).toEqual(DEFAULT_MODEL_PRICES["anthropic.claude-sonnet-4-20250514-v1:0"]);
      });

      it("throws ValidationError for prices that are not JSON or lack a kind of token", () => {
        expect(() => loadConfig({ MODEL_PRICES: "{not json" })).toThrow(ValidationError);
        expect(() => loadConfig({ MODEL_PRICES: JSON.stringify({ m: { input: 1, output: 5 } }) })).toThrow(ValidationError);
        expect(() => loadConfig({ MODEL_PRICES: JSON.stringify({ m: { input: -1, output: 5, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 } }) })).toThrow(
          ValidationError,
        );
      });
    });
  });

  describe("priceOf", () => {
    it("returns a model's price by its id or by its id without the inference-profile prefix", () => {
      const sonnet = DEFAULT_MODEL_PRICES["anthropic.claude-sonnet-4-20250514-v1:0"];
      expect(priceOf(DEFAULT_MODEL_PRICES, "us.anthropic.claude-sonnet-4-20250514-v1:0")).toBe(sonnet);
      expect(priceOf(DEFAULT_MODEL_PRICES, "eu.anthropic.claude-sonnet-4-20250514-v1:0")).toBe(sonnet);
      expect(priceOf(DEFAULT_MODEL_PRICES, "local")).toBeUndefined();
    });
  });
});
