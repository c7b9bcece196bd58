// PLACEHOLDER (issue 5, phase 1): lets the CDK stack bundle and synthesize before the real
// handler exists. It is replaced by the middy handler over lib/ in phase 2; do not build on it.
export const handler = async (): Promise<{ statusCode: number; body: string }> => ({
  statusCode: 503,
  body: JSON.stringify({ error: { code: "not_implemented", message: "the slack handler is not deployed yet" } }),
});
