/**
 * Questions the sample tools answer from their sample data (the SQLite sales database of Alder &
 * Pike Supply Co., where "last month" is October 2026, and the bundled handbook), written so the
 * offline model calls the tool: its name followed by a JSON object of arguments. docs/tools.md lists
 * them and `test/tools/local-model-examples.test.ts` runs each through the offline model.
 */
export const SAMPLE_QUESTIONS = {
  sql_query: [
    `Why did margin fall last month? sql_query {"sql": "SELECT month, ` +
      `round(100.0*sum(gross_profit)/sum(revenue),1) AS margin_pct, ` +
      `round(100.0*sum(discount_amount)/sum(revenue+discount_amount),1) AS discount_pct FROM sales WHERE month >= ` +
      `'2026-08' GROUP BY month"}`,
    `Which customers drove it? sql_query {"sql": "SELECT customer, region, round(sum(discount_amount)) AS ` +
      `discount, round(100.0*sum(gross_profit)/sum(revenue),1) AS margin_pct FROM sales WHERE month = '2026-10' ` +
      `GROUP BY customer, region ORDER BY discount DESC LIMIT 5"}`,
    `Did a cost change play a part? sql_query {"sql": "SELECT category, month, ` +
      `round(100.0*sum(gross_profit)/sum(revenue),1) AS margin_pct FROM sales WHERE month IN ('2026-09','2026-10') ` +
      `AND customer NOT IN ('Helios Freight Group','Cobalt Ridge Hospitals','Juniper Street Markets') GROUP BY ` +
      `category, month ORDER BY category, month"}`,
    `Try a write: sql_query {"sql": "DELETE FROM orders"}`,
  ],
  search_documents: [
    `What does the October report say? search_documents {"query": "October 2026 margin drop"}`,
    `Who must approve a 30% discount? search_documents {"query": "discount approval above 15%"}`,
    `How is gross margin defined? search_documents {"query": "gross margin definition"}`,
  ],
  create_follow_up: [
    `create_follow_up {"title": "Explain the October West volume deals above 15% discount", "owner": "Daniel Okafor", "dueDate": "2026-11-15"}`,
  ],
} as const satisfies Record<string, readonly string[]>;
