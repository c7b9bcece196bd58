import { createServer, type Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import type { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";

export interface BedrockAgentRuntimeEndpoint {
  url: string;
  requests: { knowledgeBaseId: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

type Filter = Record<string, unknown>;

/**
 * Whether a document's metadata passes a `RetrievalFilter`, as the service evaluates one: a
 * comparison on a key the document lacks fails, `listContains` needs a list holding the value,
 * `andAll` and `orAll` combine two or more filters. An operator it does not know fails the document.
 */
export function passes(filter: Filter, metadata: Record<string, unknown>): boolean {
  const [[operator, operand]] = Object.entries(filter) as [[string, unknown]];
  if (operator === "andAll") return (operand as Filter[]).every((f) => passes(f, metadata));
  if (operator === "orAll") return (operand as Filter[]).some((f) => passes(f, metadata));
  const { key, value } = operand as { key: string; value: unknown };
  if (!Object.hasOwn(metadata, key)) return false;
  const actual = metadata[key];
  switch (operator) {
    case "equals":
      return actual === value;
    case "notEquals":
      return actual !== value;
    case "in":
      return (value as unknown[]).includes(actual);
    case "notIn":
      return !(value as unknown[]).includes(actual);
    case "listContains":
      return Array.isArray(actual) && actual.includes(value);
    case "stringContains":
      return typeof actual === "string" ? actual.includes(String(value)) : Array.isArray(actual) && actual.some((a) => String(a).includes(String(value)));
    case "startsWith":
      return typeof actual === "string" && actual.startsWith(String(value));
    default:
      return false;
  }
}

/** Why a filter is malformed, as the service refuses it (a union of exactly one member; `andAll`/`orAll` of two or more), or undefined. */
function malformed(filter: unknown): string | undefined {
  if (typeof filter !== "object" || filter === null || Object.keys(filter).length !== 1) return "a RetrievalFilter sets exactly one member";
  const [[operator, operand]] = Object.entries(filter);
  if (operator === "andAll" || operator === "orAll") {
    if (!Array.isArray(operand) || operand.length < 2) return `${operator} needs at least 2 filters`;
    return operand.map(malformed).find(Boolean);
  }
  return typeof (operand as { key?: unknown })?.key === "string" ? undefined : `${operator} needs a key`;
}

function send(res: Http2ServerResponse, status: number, body: unknown, errorType?: string): void {
  res.writeHead(status, { "content-type": "application/json", ...(errorType && { "x-amzn-errortype": errorType }) });
  res.end(JSON.stringify(body));
}

/**
 * A local Bedrock Agent Runtime `Retrieve` (REST JSON: `POST /knowledgebases/{id}/retrieve`),
 * over cleartext HTTP/2 as the SDK's client for this service speaks it,
 * that answers from a local index, with the response shape and the
 * ResourceNotFoundException of the real service. It evaluates the request's metadata filter on each
 * document's sidecar metadata, and refuses (ValidationException) a request without one: every
 * search of this knowledge base must say whose documents it may return.
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
      retrievalConfiguration?: { vectorSearchConfiguration?: { numberOfResults?: number; filter?: Filter } };
    };
    const id = decodeURIComponent(match[1]!);
    requests.push({ knowledgeBaseId: id, body: body as Record<string, unknown> });
    if (id !== knowledgeBaseId) {
      return send(res, 404, { message: `Knowledge base ${id} does not exist` }, "ResourceNotFoundException");
    }
    const search = body.retrievalConfiguration?.vectorSearchConfiguration;
    const filter = search?.filter;
    if (filter === undefined) {
      return send(res, 400, { message: "this knowledge base is shared: every Retrieve needs a metadata filter naming whose documents" }, "ValidationException");
    }
    const problem = malformed(filter);
    if (problem) return send(res, 400, { message: problem }, "ValidationException");
    const wanted = search?.numberOfResults ?? 5;
    const ranked = await index.rankUnfiltered(body.retrievalQuery?.text ?? "", 1_000);
    const passages = ranked.filter((p) => passes(filter, p.metadata)).slice(0, wanted);
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
