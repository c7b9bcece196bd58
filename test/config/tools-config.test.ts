import { describe, expect, it } from "vitest";
import { DEFAULT_SQL_MAX_ROWS, DEFAULT_TOOL_TIMEOUT_MS, loadToolsConfig, TOOL_NAMES } from "../../lib/config/tools-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("loadToolsConfig", () => {
  it("returns the local defaults for an empty environment", () => {
    const config = loadToolsConfig({});
    expect(config).toMatchObject({
      sql: { engine: "sqlite", maxRows: DEFAULT_SQL_MAX_ROWS },
      documents: { engine: "local" },
      timeoutMs: DEFAULT_TOOL_TIMEOUT_MS,
      roles: {},
    });
    expect(config.powerBi).toBeUndefined();
  });

  it("returns the Athena settings when SQL_ENGINE=athena", () => {
    const config = loadToolsConfig({
      SQL_ENGINE: "athena",
      ATHENA_WORKGROUP: "wg",
      ATHENA_DATABASE: "sales",
      ATHENA_OUTPUT_LOCATION: "s3://bucket/results/",
      AWS_REGION: "eu-central-1",
    });
    expect(config.sql).toMatchObject({ engine: "athena", workgroup: "wg", database: "sales", catalog: "AwsDataCatalog", region: "eu-central-1" });
  });

  it("throws a ValidationError naming ATHENA_DATABASE when Athena lacks it", () => {
    const error = (() => {
      try {
        loadToolsConfig({ SQL_ENGINE: "athena", ATHENA_WORKGROUP: "wg" });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details?.[0]?.path).toBe("ATHENA_DATABASE");
  });

  it("throws when only part of the Power BI settings is given", () => {
    expect(() => loadToolsConfig({ POWERBI_TENANT_ID: "t" })).toThrow(ValidationError);
  });

  it("returns the roles per tool from TOOL_ROLES", () => {
    expect(loadToolsConfig({ TOOL_ROLES: '{"sql_query":["analyst","finance"]}' }).roles).toEqual({ sql_query: ["analyst", "finance"] });
  });

  it("throws for TOOL_ROLES naming a tool that does not exist, with the unknown and the valid names", () => {
    // A typo once left the real tool open to everyone.
    const error = (() => {
      try {
        loadToolsConfig({ TOOL_ROLES: '{"create_followup":["analyst"],"sql_query":["analyst"],"read_output":[]}' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ValidationError);
    const detail = (error as ValidationError).details?.[0];
    expect(detail?.path).toBe("TOOL_ROLES");
    expect(detail?.message).toContain("unknown tool names create_followup, read_output");
    expect(detail?.message).toContain(`valid names: ${TOOL_NAMES.join(", ")}`);
  });

  it("returns roles for every tool name, read_tool_output included", () => {
    const roles = Object.fromEntries(TOOL_NAMES.map((name) => [name, ["analyst"]]));
    expect(loadToolsConfig({ TOOL_ROLES: JSON.stringify(roles) }).roles).toEqual(roles);
  });

  it("throws for TOOL_ROLES that is not a map of role lists", () => {
    expect(() => loadToolsConfig({ TOOL_ROLES: '{"sql_query":"analyst"}' })).toThrow(ValidationError);
    expect(() => loadToolsConfig({ TOOL_ROLES: "sql_query=analyst" })).toThrow(ValidationError);
  });

  it("throws for an output location that is not an S3 URI", () => {
    expect(() => loadToolsConfig({ ATHENA_OUTPUT_LOCATION: "https://example.com" })).toThrow(ValidationError);
  });
});
