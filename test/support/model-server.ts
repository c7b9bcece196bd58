import { vi } from "vitest";
import { startTestServer, type TestServer } from "./api-client.js";
import { startConverseEndpoint, type Responder } from "./converse-endpoint.js";

export interface ModelServer {
  api: TestServer;
  close(): Promise<void>;
}

/**
 * The local server with `MODEL_PROVIDER=bedrock`, its ChatBedrockConverse pointed at a local Converse
 * endpoint that answers with `respond`; `env` adds settings.
 */
export async function startServerWithModel(respond: Responder, env: Record<string, string> = {}): Promise<ModelServer> {
  const converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  const api = await startTestServer({ MODEL_PROVIDER: "bedrock", ...env });
  return {
    api,
    async close() {
      await api.close();
      await converse.close();
      vi.unstubAllEnvs();
    },
  };
}
