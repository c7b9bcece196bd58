import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What GetFoundationModelAvailability answers, as Bedrock's control plane (REST-JSON) names it. */
export interface FoundationModelAvailability {
  agreementAvailability: { status: "AVAILABLE" | "PENDING" | "NOT_AVAILABLE" | "ERROR"; errorMessage?: string };
  authorizationStatus: "AUTHORIZED" | "NOT_AUTHORIZED";
  entitlementAvailability: "AVAILABLE" | "NOT_AVAILABLE";
  regionAvailability: "AVAILABLE" | "NOT_AVAILABLE";
}

/** An account subscribed to the model in a region that offers it. */
export const SUBSCRIBED: FoundationModelAvailability = {
  agreementAvailability: { status: "AVAILABLE" },
  authorizationStatus: "AUTHORIZED",
  entitlementAvailability: "AVAILABLE",
  regionAvailability: "AVAILABLE",
};

export interface BedrockControlEndpoint {
  url: string;
  /** The model ids asked about, in order. */
  asked: string[];
  setAvailability(availability: FoundationModelAvailability): void;
  close(): Promise<void>;
}

/**
 * A stand-in for Bedrock's control plane, answering `GET /foundation-model-availability/{modelId}`
 * as the AWS SDK's BedrockClient calls it; an unsigned request is refused as AWS refuses it.
 */
export async function startBedrockControlEndpoint(availability: FoundationModelAvailability = SUBSCRIBED): Promise<BedrockControlEndpoint> {
  let current = availability;
  const asked: string[] = [];
  const server: Server = createServer((request, response) => {
    const match = /^\/foundation-model-availability\/([^/?]+)$/.exec(request.url ?? "");
    const reply = (status: number, body: unknown, errorType?: string) => {
      response.writeHead(status, { "content-type": "application/json", ...(errorType && { "x-amzn-errortype": errorType }) });
      response.end(JSON.stringify(body));
    };
    if (!String(request.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 "))
      return reply(403, { message: "Missing Authentication Token" }, "AccessDeniedException");
    if (request.method !== "GET" || !match) return reply(404, { message: `No operation at ${request.method} ${request.url}` }, "UnknownOperationException");
    const modelId = decodeURIComponent(match[1]);
    asked.push(modelId);
    reply(200, { modelId, ...current });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked,
    setAvailability: (next) => void (current = next),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
