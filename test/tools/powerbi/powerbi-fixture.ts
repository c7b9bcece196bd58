import { EntraTokenProvider } from "../../../lib/tools/powerbi/entra-token-provider.js";
import { PowerBiClient } from "../../../lib/tools/powerbi/power-bi-client.js";
import type { SecretSource } from "../../../lib/tools/secrets.js";
import { buildSalesDatabase } from "../../../lib/tools/sql/sales-dataset.js";
import { openDatabaseImage } from "../../../lib/tools/sql/sqlite-wasm.js";
import { startPowerBiEndpoint, type PowerBiEndpoint } from "../../support/powerbi-endpoint.js";

export const MARGIN_BY_MONTH = `EVALUATE
  SUMMARIZECOLUMNS ( 'Date'[Month], "Gross Margin %", [Gross Margin %] )
  ORDER BY 'Date'[Month]`;

export const REVENUE_BY_REGION = `EVALUATE
  SUMMARIZECOLUMNS ( 'Region'[Name], "Revenue", [Revenue] )
  ORDER BY 'Region'[Name]`;

/** Users of the sample model's RLS roles: alice sees West, bob North and East; anyone else no region. */
export const RLS_USERS = { "alice@acme.com": ["West"], "bob@acme.com": ["North", "East"] };

/** Revenue per region of the sample data, as the semantic model answers it. */
async function revenueRows(): Promise<Record<string, unknown>[]> {
  const db = await openDatabaseImage(await buildSalesDatabase());
  const rows = db.selectObjects("SELECT region, round(sum(revenue)) AS revenue FROM sales GROUP BY region ORDER BY region") as {
    region: string;
    revenue: number;
  }[];
  db.close();
  return rows.map((r) => ({ "Region[Name]": r.region, "[Revenue]": r.revenue }));
}

/** The semantic model's answer, computed from the same sample data the SQL tool serves. */
async function marginRows(): Promise<Record<string, unknown>[]> {
  const db = await openDatabaseImage(await buildSalesDatabase());
  const rows = db.selectObjects("SELECT month, 100.0 * sum(gross_profit) / sum(revenue) AS gm FROM sales GROUP BY month ORDER BY month") as {
    month: string;
    gm: number;
  }[];
  db.close();
  return rows.map((r) => ({ "Date[Month]": r.month, "[Gross Margin %]": r.gm }));
}

export const secrets = (values: Record<string, string>): SecretSource => ({ get: async (name) => values[name] });
export const creds = { powerBiClientId: "app-123", powerBiClientSecret: "s3cr3t-value" };

/** The local Power BI and Entra ID endpoint, serving the margin-by-month and revenue-by-region queries, with RLS on the region. */
export async function startSampleEndpoint(): Promise<PowerBiEndpoint> {
  return startPowerBiEndpoint({
    tenantId: "tenant-1",
    clientId: creds.powerBiClientId,
    clientSecret: creds.powerBiClientSecret,
    groupId: "group-1",
    datasetId: "dataset-1",
    queries: { [MARGIN_BY_MONTH]: await marginRows(), [REVENUE_BY_REGION]: await revenueRows() },
    rls: { column: "Region[Name]", users: RLS_USERS },
  });
}

export function tokenProvider(endpoint: PowerBiEndpoint, secretValues: Record<string, string> = creds, expirySkewMs?: number) {
  return new EntraTokenProvider({
    loginUrl: endpoint.loginUrl,
    tenantId: "tenant-1",
    secrets: secrets(secretValues),
    clientIdSecret: "powerBiClientId",
    clientSecretSecret: "powerBiClientSecret",
    expirySkewMs,
  });
}

export function powerBiClient(endpoint: PowerBiEndpoint, tokens: EntraTokenProvider, datasetId = "dataset-1") {
  return new PowerBiClient({ apiUrl: endpoint.apiUrl, groupId: "group-1", datasetId, tokens, maxWaitMs: 2_000 });
}
