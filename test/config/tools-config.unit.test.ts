import { describe, expect, it } from "vitest";
import { DEFAULT_SQL_MAX_ROWS, DEFAULT_TOOL_TIMEOUT_MS, loadToolsConfig, TOOL_NAMES, TOOL_SETTINGS } from "../../lib/config/tools-config.js";
import { readmeConfigTable } from "../../lib/config/config-table.js";
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

  it("returns each setting's registered default where the variable is unset, and the variable's value where it is set", () => {
    const unset = loadToolsConfig({ POWERBI_TENANT_ID: "t", POWERBI_GROUP_ID: "g", POWERBI_DATASET_ID: "d" });
    const d = (name: keyof typeof TOOL_SETTINGS) => (TOOL_SETTINGS[name] as { default?: unknown }).default;
    expect(unset.sql).toMatchObject({
      engine: d("SQL_ENGINE"),
      maxRows: d("SQL_MAX_ROWS"),
      maxBytes: d("SQL_MAX_RESULT_BYTES"),
      timeoutMs: d("SQL_TIMEOUT_MS"),
    });
    expect(unset.documents).toMatchObject({ engine: d("DOCUMENTS_ENGINE"), maxResults: d("DOCUMENT_RESULTS") });
    expect(unset.powerBi).toMatchObject({ apiUrl: d("POWERBI_API_URL"), loginUrl: d("POWERBI_LOGIN_URL"), clientIdSecret: d("POWERBI_CLIENT_ID_SECRET") });
    expect(unset).toMatchObject({ timeoutMs: d("TOOL_TIMEOUT_MS"), idempotencyTtlSeconds: d("TOOL_IDEMPOTENCY_TTL_SECONDS") });
    expect(unset.approvals.ttlSeconds).toBe(d("APPROVAL_TTL_SECONDS"));
    const set = loadToolsConfig({ SQL_MAX_ROWS: "7", DOCUMENT_RESULTS: "3", TOOL_IDEMPOTENCY_TTL_SECONDS: "60", APPROVAL_TTL_SECONDS: "90" });
    expect([set.sql.maxRows, set.documents.maxResults, set.idempotencyTtlSeconds, set.approvals.ttlSeconds]).toEqual([7, 3, 60, 90]);
  });

  it("returns a configuration table row for every tool setting", () => {
    const table = readmeConfigTable();
    for (const name of Object.keys(TOOL_SETTINGS)) expect(table).toContain(`| \`${name}\` |`);
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

  it("returns the Power BI identity map from POWERBI_IDENTITY_MAP", () => {
    const env = { POWERBI_TENANT_ID: "t", POWERBI_GROUP_ID: "g", POWERBI_DATASET_ID: "d" };
    expect(loadToolsConfig(env).powerBi?.identityMap).toEqual({});
    const map = { "slack:T0ACME:U0ALICE": "alice@acme.com" };
    expect(loadToolsConfig({ ...env, POWERBI_IDENTITY_MAP: JSON.stringify(map) }).powerBi?.identityMap).toEqual(map);
  });

  it("throws for a POWERBI_IDENTITY_MAP key that names no issuer", () => {
    const env = { POWERBI_TENANT_ID: "t", POWERBI_GROUP_ID: "g", POWERBI_DATASET_ID: "d", POWERBI_IDENTITY_MAP: '{"U0ALICE":"alice@acme.com"}' };
    expect(() => loadToolsConfig(env)).toThrow(ValidationError);
  });

  it("returns the row policy of SQL_ROW_POLICY with the sqlite engine, and throws for one that is not a map of region lists", () => {
    expect(loadToolsConfig({ SQL_ROW_POLICY: '{"*":["North"],"analyst":"*"}' }).sql).toMatchObject({ rowPolicy: { "*": ["North"], analyst: "*" } });
    expect(() => loadToolsConfig({ SQL_ROW_POLICY: '{"analyst":"West"}' })).toThrow(ValidationError);
  });

  it("returns the access rules of ATHENA_ACCESS, and throws for an entry without an IAM role ARN", () => {
    const athena = { SQL_ENGINE: "athena", ATHENA_WORKGROUP: "wg", ATHENA_DATABASE: "db" };
    const rules = [{ role: "*", roleArn: "arn:aws:iam::123456789012:role/threadwise-emea", workgroup: "emea" }];
    expect(loadToolsConfig({ ...athena, ATHENA_ACCESS: JSON.stringify(rules) }).sql).toMatchObject({ access: rules });
    expect(() => loadToolsConfig({ ...athena, ATHENA_ACCESS: '[{"role":"*","roleArn":"threadwise-emea"}]' })).toThrow(ValidationError);
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
