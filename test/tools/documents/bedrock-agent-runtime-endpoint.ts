import { createServer, type Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import type { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";

export interface BedrockAgentRuntimeEndpoint {
  url: string;
  requests: { knowledgeBaseId: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

function send(res: Http2ServerResponse, status: number, body: unknown, errorType?: string): void {
  res.writeHead(status, { "content-type": "application/json", ...(errorType && { "x-amzn-errortype": errorType }) });
  res.end(JSON.stringify(body));
}

/**
 * A local Bedrock Agent Runtime `Retrieve` (REST JSON: `POST /knowledgebases/{id}/retrieve`),
 * over cleartext HTTP/2 as the SDK's client for this service speaks it,
 * that answers from a local index, with the response shape and the
 * ResourceNotFoundException of the real service.
 */
export async function startBedrockAgentRuntimeEndpoint(knowledgeBaseId: string, index: LocalDocumentIndex): Promise<BedrockAgentRuntimeEndpoint> {
  const requests: BedrockAgentRuntimeEndpoint["requests"] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const match = /^\/knowledgebases\/([^/]+)\/retrieve$/.exec(req.url ?? "");
    if (req.method !== "POST" || !match) return send(res, 404, { message: "not found" }, "UnknownOperationException");
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
      retrievalQuery?: { text?: string };
      retrievalConfiguration?: { vectorSearchConfiguration?: { numberOfResults?: number } };
    };
    const id = decodeURIComponent(match[1]!);
    requests.push({ knowledgeBaseId: id, body: body as Record<string, unknown> });
    if (id !== knowledgeBaseId) {
      return send(res, 404, { message: `Knowledge base ${id} does not exist` }, "ResourceNotFoundException");
    }
    const passages = await index.search(body.retrievalQuery?.text ?? "", body.retrievalConfiguration?.vectorSearchConfiguration?.numberOfResults ?? 5);
    send(res, 200, {
      retrievalResults: passages.map((p) => ({
        content: { type: "TEXT", text: p.text },
        location: { type: "S3", s3Location: { uri: `s3://alder-pike-handbook/${p.source}` } },
        metadata: { "x-amz-bedrock-kb-source-uri": `s3://alder-pike-handbook/${p.source}`, title: p.title },
        score: Math.min(1, p.score / 10),
      })),
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
