import { describe, expect, it } from "vitest";
import { CREDENTIAL_SECRETS } from "../../lib/config/credentials.js";
import {
  DEFAULT_LIVE_EVENTS_MAX_BYTES,
  DEFAULT_SYNC_TURN_DEADLINE_MS,
  DEFAULT_TURN_MAX_RECEIVES,
  loadDeploymentConfig,
} from "../../lib/config/deployment-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("deployment config", () => {
  describe("loadDeploymentConfig", () => {
    it("returns the defaults, no queue, no secrets and no TLS requirement when nothing is set", () => {
      expect(loadDeploymentConfig({})).toMatchObject({
        secretArns: {},
        turnQueueUrl: undefined,
        turnMaxReceives: DEFAULT_TURN_MAX_RECEIVES,
        syncTurnDeadlineMs: DEFAULT_SYNC_TURN_DEADLINE_MS,
        liveEventsMaxBytes: DEFAULT_LIVE_EVENTS_MAX_BYTES,
        mongodbRequireTls: false,
      });
      expect(loadDeploymentConfig({})).not.toHaveProperty("syncTurnMaxMs");
    });

    it("returns each credentials secret's ARN by the secret's name", () => {
      const [name, secret] = Object.entries(CREDENTIAL_SECRETS)[0];
      expect(loadDeploymentConfig({ [secret.variable]: "arn:aws:secretsmanager:us-east-1:1:secret:x" }).secretArns).toEqual({
        [name]: "arn:aws:secretsmanager:us-east-1:1:secret:x",
      });
    });

    it("throws ValidationError for a secret variable that is not an ARN", () => {
      const [, secret] = Object.entries(CREDENTIAL_SECRETS)[0];
      expect(() => loadDeploymentConfig({ [secret.variable]: "my-secret" })).toThrow(ValidationError);
    });
  });
});
