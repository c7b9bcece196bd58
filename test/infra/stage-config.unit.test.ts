import { CURRENTLY_RECOMMENDED_FLAGS } from "aws-cdk-lib/cx-api";
import { readFileSync } from "node:fs";
import { App } from "aws-cdk-lib";
import { DEFAULT_BEDROCK_MODEL_ID } from "../../lib/config/model-config.js";
import { ValidationError } from "../../lib/errors.js";
import {
  CONTEXT_KEYS,
  DEFAULT_LOG_RETENTION_DAYS,
  DEFAULT_MONGODB_CONNECTION_BUDGET,
  DEFAULT_MONGODB_MAX_IDLE_SECONDS,
  DEFAULT_STAGE,
  MAX_ATHENA_SCHEMA_DESCRIPTION_CHARS,
  readStageConfig,
} from "../../infra/stage-config.js";

const read = (context: Record<string, unknown>) => readStageConfig(new App({ context }).node);

describe("stage-config", () => {
  describe("readStageConfig", () => {
    it("returns the documented defaults when no context is given", () => {
      const config = read({});
      expect(config.stage).toBe(DEFAULT_STAGE);
      expect(config.jwtIssuer).toBeUndefined();
      expect(config.bedrockModelId).toBe(DEFAULT_BEDROCK_MODEL_ID);
      expect(config.logRetentionDays).toBe(DEFAULT_LOG_RETENTION_DAYS);
      expect(config.secretArns).toEqual({});
      expect(config.retainData).toBe(false);
      expect(config.mongodb).toEqual({
        connectionBudget: DEFAULT_MONGODB_CONNECTION_BUDGET,
        replicaSetMembers: 3,
        maxIdleSeconds: DEFAULT_MONGODB_MAX_IDLE_SECONDS,
      });
      expect(config.vpc).toBeUndefined();
    });

    it("returns values given as strings on the command line, typed", () => {
      const config = read({
        stage: "prod",
        jwtIssuer: "https://login.example.com/",
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
      expect(read({ stage: "prod", alarmEmails: "oncall@example.com" }).retainData).toBe(true);
    });

    it("treats empty strings as unset, as cdk.json leaves them", () => {
      expect(read({ secretArns: "", jwtIssuer: "" }).secretArns).toEqual({});
    });

    it("returns existing secrets by name, from JSON on the command line or an object in cdk.json", () => {
      const database = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/threadwise/database-AbC123";
      expect(read({ secretArns: JSON.stringify({ database }) }).secretArns).toEqual({ database });
      expect(read({ secretArns: { database } }).secretArns).toEqual({ database });
    });

    it("throws when secretArns names a secret the stack does not have", () => {
      expect(() => read({ secretArns: { credentials: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:x" } })).toThrow(ValidationError);
    });

    it("throws for the former secretArn, saying what replaced it, rather than deploying empty secrets", () => {
      expect(() => read({ secretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/threadwise/credentials" })).toThrow(
        expect.objectContaining({ details: [{ path: "secretArn", message: expect.stringContaining("secretArns") }] }),
      );
    });

    it("throws for a KMS key without an imported secret it would decrypt", () => {
      expect(() => read({ secretsKmsKeyArn: "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "secretsKmsKeyArn" })] }),
      );
    });

    it("returns a VPC with one NAT gateway for vpc=nat, and Atlas's endpoint service when given", () => {
      const service = "com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0";
      expect(read({ vpc: "nat", atlasPrivateEndpointServiceName: service }).vpc).toEqual({ natGateways: 1, atlasPrivateEndpointServiceName: service });
      expect(read({ vpc: "none" }).vpc).toBeUndefined();
    });

    it("throws for VPC settings without vpc=nat", () => {
      expect(() => read({ vpcNatGateways: 2 })).toThrow(expect.objectContaining({ details: [{ path: "vpcNatGateways", message: "needs vpc=nat" }] }));
    });

    it("returns content encryption on, with a 7-day deletion window and yearly rotation, unless the context says otherwise", () => {
      expect(read({}).contentEncryption).toEqual({ enabled: true, keyDeletionDays: 7, keyRotationDays: 365 });
      expect(read({ contentKeyDeletionDays: "30" }).contentEncryption).toEqual({ enabled: true, keyDeletionDays: 30, keyRotationDays: 365 });
      expect(read({ contentKeyRotationDays: "90" }).contentEncryption).toEqual({ enabled: true, keyDeletionDays: 7, keyRotationDays: 90 });
      expect(read({ contentKeyRotationDays: "0" }).contentEncryption).toEqual({ enabled: true, keyDeletionDays: 7, keyRotationDays: 0 });
      expect(read({ contentEncryption: "off" }).contentEncryption).toEqual({ enabled: false, keyDeletionDays: 7, keyRotationDays: 365 });
    });

    it.each([["-1"], ["3651"], ["1.5"]])("throws for a key rotation period of %s days", (days) => {
      expect(() => read({ contentKeyRotationDays: days })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "contentKeyRotationDays" })] }),
      );
    });

    it.each([["6"], ["31"], ["7.5"]])("throws for a key deletion window of %s days, outside KMS's 7 to 30", (days) => {
      expect(() => read({ contentKeyDeletionDays: days })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "contentKeyDeletionDays" })] }),
      );
    });

    it("throws for a content encryption other than on or off, and for a deletion window with encryption off", () => {
      expect(() => read({ contentEncryption: "false" })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "contentEncryption" })] }),
      );
      expect(() => read({ contentEncryption: "off", contentKeyDeletionDays: 10 })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "contentKeyDeletionDays" })] }),
      );
      expect(() => read({ contentEncryption: "off", contentKeyRotationDays: 30 })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "contentKeyRotationDays" })] }),
      );
    });

    it("throws when the stage name is not usable in resource names", () => {
      expect(() => read({ stage: "Prod_1" })).toThrow(ValidationError);
    });

    it("throws when the log retention is not a CloudWatch value", () => {
      expect(() => read({ logRetentionDays: 31 })).toThrow(ValidationError);
    });
  });

  describe("readStageConfig tools", () => {
    const athena = { athenaWorkgroup: "analytics", athenaDatabase: "sales" };
    const powerBi = {
      powerBiTenantId: "contoso.onmicrosoft.com",
      powerBiGroupId: "0f8e7c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
      powerBiDatasetId: "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
    };
    const issuesOf = (context: Record<string, unknown>) => {
      try {
        read(context);
      } catch (error) {
        if (error instanceof ValidationError) return error.details?.map((d) => d.path) ?? [];
        throw error;
      }
      throw new Error("no ValidationError");
    };

    it("returns no AWS tool engine, and no sample tools, when no tool key is given", () => {
      expect(read({}).tools).toEqual({ channelRoles: {}, sampleTools: false });
    });

    it("returns the sample tools kept when sampleTools is true, from cdk.json or -c", () => {
      expect(read({ sampleTools: true }).tools.sampleTools).toBe(true);
      expect(read({ sampleTools: "true" }).tools.sampleTools).toBe(true);
    });

    it("returns Athena with the default catalog and the output location as results bucket and prefix", () => {
      const config = read({ ...athena, athenaOutputLocation: "s3://tw-results/athena/queries/" }).tools.athena;
      expect(config).toEqual({
        workgroup: "analytics",
        database: "sales",
        catalog: "AwsDataCatalog",
        outputLocation: "s3://tw-results/athena/queries/",
        results: { bucket: "tw-results", prefix: "athena/queries" },
        dataBucketArns: [],
        schemaDescription: undefined,
      });
    });

    it("returns the whole results bucket when only athenaResultsBucket is given", () => {
      const config = read({ ...athena, athenaResultsBucket: "tw-results" }).tools.athena;
      expect(config?.results).toEqual({ bucket: "tw-results", prefix: "" });
      expect(config?.outputLocation).toBeUndefined();
    });

    it("returns the data bucket ARNs from a comma-separated string and from a JSON array alike", () => {
      const arns = ["arn:aws:s3:::tw-lake", "arn:aws:s3:::tw-lake-archive"];
      expect(read({ ...athena, athenaDataBucketArns: arns.join(", ") }).tools.athena?.dataBucketArns).toEqual(arns);
      expect(read({ ...athena, athenaDataBucketArns: arns }).tools.athena?.dataBucketArns).toEqual(arns);
    });

    it("returns the knowledge base with its region only when one is given", () => {
      expect(read({ knowledgeBaseId: "KB12345678" }).tools.knowledgeBase).toEqual({ id: "KB12345678", region: undefined });
      expect(read({ knowledgeBaseId: "KB12345678", knowledgeBaseRegion: "eu-central-1" }).tools.knowledgeBase?.region).toBe("eu-central-1");
    });

    it("returns Power BI when tenant, group and dataset are all given", () => {
      expect(read(powerBi).tools.powerBi).toEqual({
        tenantId: powerBi.powerBiTenantId,
        groupId: powerBi.powerBiGroupId,
        datasetId: powerBi.powerBiDatasetId,
      });
    });

    it("returns toolRoles as normalized JSON whether given as a string or as an object", () => {
      const roles = { create_follow_up: ["analyst", "manager"] };
      expect(read({ toolRoles: ` ${JSON.stringify(roles, null, 2)} ` }).tools.toolRoles).toBe(JSON.stringify(roles));
      expect(read({ toolRoles: roles }).tools.toolRoles).toBe(JSON.stringify(roles));
    });

    it("returns slackRoles and teamsRoles as normalized JSON whether given as a string or as an object", () => {
      const slack = { T0123: { default: ["viewer"], users: { U0ALICE: ["analyst"] } } };
      const teams = { "contoso-tenant": { users: { "object-id": ["analyst"] } } };
      expect(read({ slackRoles: ` ${JSON.stringify(slack, null, 2)} `, teamsRoles: teams }).tools.channelRoles).toEqual({
        slack: JSON.stringify(slack),
        teams: JSON.stringify(teams),
      });
    });

    it("throws when athenaWorkgroup comes without athenaDatabase", () => {
      expect(issuesOf({ athenaWorkgroup: "analytics" })).toEqual(["athenaDatabase"]);
    });

    it("throws when an Athena option comes without the workgroup and database", () => {
      expect(issuesOf({ athenaOutputLocation: "s3://tw-results/athena", athenaDataBucketArns: "arn:aws:s3:::tw-lake" })).toEqual([
        "athenaOutputLocation",
        "athenaDataBucketArns",
      ]);
    });

    it("throws when both athenaOutputLocation and athenaResultsBucket are given", () => {
      expect(issuesOf({ ...athena, athenaOutputLocation: "s3://a-results/x", athenaResultsBucket: "b-results" })).toEqual(["athenaResultsBucket"]);
    });

    it("throws when the output location is not an s3:// URI or a data bucket is not a bucket ARN", () => {
      expect(issuesOf({ ...athena, athenaOutputLocation: "https://tw-results.s3.amazonaws.com/athena" })).toEqual(["athenaOutputLocation"]);
      expect(issuesOf({ ...athena, athenaDataBucketArns: "arn:aws:s3:::tw-lake/prefix" })).toEqual(["athenaDataBucketArns.0"]);
    });

    it("throws when the database name is not one Athena gives a Glue database", () => {
      expect(issuesOf({ ...athena, athenaDatabase: "Sales" })).toEqual(["athenaDatabase"]);
    });

    it("throws when the schema description would not fit Lambda's environment", () => {
      const long = "x".repeat(MAX_ATHENA_SCHEMA_DESCRIPTION_CHARS + 1);
      expect(issuesOf({ ...athena, athenaSchemaDescription: long })).toEqual(["athenaSchemaDescription"]);
    });

    it("returns the recall embeddings model when one is given, and none by default", () => {
      expect(read({ recallEmbeddingsModelId: "amazon.titan-embed-text-v2:0" }).recallEmbeddingsModelId).toBe("amazon.titan-embed-text-v2:0");
      expect(read({}).recallEmbeddingsModelId).toBeUndefined();
    });

    it("throws when recallEmbeddingsModelId is not a Titan Text Embeddings V2 model, whose request format search speaks", () => {
      expect(issuesOf({ recallEmbeddingsModelId: "cohere.embed-english-v3" })).toEqual(["recallEmbeddingsModelId"]);
    });

    it("throws when knowledgeBaseRegion comes without knowledgeBaseId", () => {
      expect(issuesOf({ knowledgeBaseRegion: "eu-central-1" })).toEqual(["knowledgeBaseRegion"]);
    });

    it("throws when only part of the Power BI keys is given", () => {
      expect(issuesOf({ powerBiTenantId: powerBi.powerBiTenantId, powerBiGroupId: powerBi.powerBiGroupId })).toEqual(["powerBiTenantId"]);
    });

    it("throws when the follow-up webhook is not https", () => {
      expect(issuesOf({ followUpWebhookUrl: "http://hooks.example.com/follow-ups" })).toEqual(["followUpWebhookUrl"]);
    });

    it.each([
      ["not JSON", "{create_follow_up: analyst}"],
      ["roles not a list", '{"create_follow_up":"analyst"}'],
    ])("throws when toolRoles is %s", (_name, toolRoles) => {
      expect(issuesOf({ toolRoles })).toEqual(["toolRoles"]);
    });

    it.each([
      ["slackRoles", "not JSON", "{T0123: viewer}"],
      ["teamsRoles", "roles not a list", '{"contoso":{"default":"viewer"}}'],
    ])("throws when %s is %s", (key, _name, value) => {
      expect(issuesOf({ [key]: value })).toEqual([key]);
    });
  });

  describe("cdk.json", () => {
    it("documents every context key and nothing unknown", () => {
      const context = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")).context as Record<string, unknown>;
      const ours = Object.keys(context).filter((k) => !k.startsWith("@") && k !== "//");
      expect(ours.sort()).toEqual([...CONTEXT_KEYS].sort());
    });

    it("sets every feature flag `cdk init` sets for a new app with this aws-cdk-lib, to its recommended value", () => {
      const context = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")).context as Record<string, unknown>;
      const flags = Object.fromEntries(Object.entries(context).filter(([key]) => key.startsWith("@")));
      expect(flags).toEqual(CURRENTLY_RECOMMENDED_FLAGS);
    });

    it("holds values that read as the defaults", () => {
      const context = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")).context as Record<string, unknown>;
      expect(read(context)).toEqual(read({}));
    });
  });
});
