import { readFileSync } from "node:fs";
import { App } from "aws-cdk-lib";
import { DEFAULT_BEDROCK_MODEL_ID } from "../../lib/config/config.js";
import { ValidationError } from "../../lib/errors.js";
import {
  CONTEXT_KEYS,
  DEFAULT_LOG_RETENTION_DAYS,
  DEFAULT_STAGE,
  PLACEHOLDER_JWT_ISSUER,
  readStageConfig,
} from "../../infra/stage-config.js";

const read = (context: Record<string, unknown>) => readStageConfig(new App({ context }).node);

describe("stage-config", () => {
  describe("readStageConfig", () => {
    it("returns the documented defaults when no context is given", () => {
      const config = read({});
      expect(config.stage).toBe(DEFAULT_STAGE);
      expect(config.jwtIssuer).toBe(PLACEHOLDER_JWT_ISSUER);
      expect(config.bedrockModelId).toBe(DEFAULT_BEDROCK_MODEL_ID);
      expect(config.logRetentionDays).toBe(DEFAULT_LOG_RETENTION_DAYS);
      expect(config.secretArn).toBeUndefined();
      expect(config.retainData).toBe(false);
    });

    it("returns values given as strings on the command line, typed", () => {
      const config = read({
        stage: "prod",
        jwtAudience: "threadwise, console",
        workerTimeoutSeconds: "120",
        retainData: "false",
      });
      expect(config.stage).toBe("prod");
      expect(config.jwtAudience).toEqual(["threadwise", "console"]);
      expect(config.workerTimeoutSeconds).toBe(120);
      expect(config.retainData).toBe(false);
    });

    it("returns retainData true for the prod stage unless told otherwise", () => {
      expect(read({ stage: "prod" }).retainData).toBe(true);
    });

    it("treats empty strings as unset, as cdk.json leaves them", () => {
      expect(read({ secretArn: "", jwtIssuer: "" }).secretArn).toBeUndefined();
    });

    it("throws when the stage name is not usable in resource names", () => {
      expect(() => read({ stage: "Prod_1" })).toThrow(ValidationError);
    });

    it("throws when the log retention is not a CloudWatch value", () => {
      expect(() => read({ logRetentionDays: 31 })).toThrow(ValidationError);
    });
  });

  describe("cdk.json", () => {
    it("documents every context key and nothing unknown", () => {
      const context = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")).context as Record<string, unknown>;
      const ours = Object.keys(context).filter((k) => !k.startsWith("@") && k !== "//");
      expect(ours.sort()).toEqual([...CONTEXT_KEYS].sort());
    });

    it("holds values that read as the defaults", () => {
      const context = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")).context as Record<string, unknown>;
      expect(read(context)).toEqual(read({}));
    });
  });
});
