import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Caller } from "../auth/principal.js";
import { MAX_PAGE_SIZE } from "../store/conversation-store.js";
import { type ApiRoutesDeps, questionText, turnEntry } from "./api-routes.js";
import { errorResponse } from "./error-response.js";
import type { HttpRequest, HttpResponse } from "./http.js";
import { mcpMessageBody } from "./mcp-schemas.js";
import { parseJsonBody } from "./request-parsing.js";
import type { Route } from "./router.js";

/** The path of the product's own MCP endpoint (docs/mcp-endpoint.md). */
export const MCP_ENDPOINT_PATH = "/v1/mcp";

/** The name and version the endpoint gives in `initialize`. */
export const MCP_SERVER_INFO = { name: "threadwise", version: "1.0.0" } as const;

export type McpRoutesDeps = Pick<ApiRoutesDeps, "authenticate" | "database" | "runner" | "limits" | "admission" | "dispatcher" | "maxMessageChars">;

/** A tool's answer: the JSON as text (what every client shows) and as structured content. */
function result(payload: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(payload) }], structuredContent: payload };
}

/**
 * A failure as the HTTP API would answer it (the one mapping, lib/api/error-response.ts), handed
 * to the client as a tool error: another user's conversation is `not_found`, a limit `rate_limited`,
 * and an unknown error says no more than the API's 500 does.
 */
function toolError(error: unknown): CallToolResult {
  const response = errorResponse(error);
  const { error: body } = JSON.parse(response.body) as { error: { code: string; message: string } };
  return { isError: true, content: [{ type: "text", text: JSON.stringify({ status: response.status, ...body }) }] };
}

async function guarded(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (error) {
    return toolError(error);
  }
}

/** The endpoint's tools for one authenticated caller: everything they do is that caller's, checked as the HTTP API checks it. */
export function threadwiseMcpServer(deps: McpRoutesDeps, caller: Caller): McpServer {
  const { conversations, messages } = deps.database;
  const { dispatch } = turnEntry(deps);
  const server = new McpServer(MCP_SERVER_INFO, { capabilities: { tools: {} } });

  server.registerTool(
    "ask",
    {
      title: "Ask Threadwise",
      description:
        "Asks a question in one of your conversations (a new one when conversationId is left out) and returns the answer, " +
        "or that the turn waits for a person's approval, or where to poll when it runs on in the background.",
      inputSchema: {
        // Checked as every entry checks a question (`questionText`): trimmed, then 400 when blank, 413 when too long.
        question: z.string().describe(`Your question: not blank, at most ${deps.maxMessageChars} characters once trimmed.`),
        conversationId: z.string().min(1).max(200).optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    ({ question, conversationId }) =>
      guarded(async () => {
        const text = questionText(question, deps.maxMessageChars, "question");
        const conversation = conversationId ? await conversations.getFor(conversationId, caller, "write") : await conversations.create(caller.principal);
        const turnId = randomUUID();
        // The same entry as POST /v1/conversations/{id}/messages: admitted by the limits, then run or queued.
        const outcome = await dispatch({ conversationId: conversation._id, caller, content: text, turnId });
        if (outcome.kind === "queued") {
          return result({ conversationId: conversation._id, turnId, status: "queued", location: `/v1/conversations/${conversation._id}/turns/${turnId}` });
        }
        const { status, answer, approvals } = outcome.result;
        if (status === "awaiting_approval") {
          return result({
            conversationId: conversation._id,
            turnId,
            status,
            approvals: approvals ?? [],
            location: `/v1/conversations/${conversation._id}/approvals?status=pending`,
          });
        }
        return result({ conversationId: conversation._id, turnId, status, answer });
      }),
  );

  server.registerTool(
    "list_conversations",
    {
      title: "List conversations",
      description: "Lists your conversations, most recently updated first; pass nextCursor back as cursor for the next page.",
      inputSchema: {
        limit: z.number().int().min(1).max(MAX_PAGE_SIZE).optional(),
        cursor: z.string().min(1).max(200).optional(),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ limit, cursor }) => guarded(async () => result({ ...(await conversations.list(caller.principal, { limit, cursor })) })),
  );

  server.registerTool(
    "read_conversation",
    {
      title: "Read a conversation",
      description: "Returns the messages of one of your conversations, oldest first.",
      inputSchema: { conversationId: z.string().min(1).max(200) },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ conversationId }) =>
      guarded(async () => {
        const conversation = await conversations.getFor(conversationId, caller, "read");
        return result({ conversationId: conversation._id, messages: await messages.list(conversation._id) });
      }),
  );
  // registerTool announces tools.listChanged; a stateless server for one request never sends that notification.
  server.server.registerCapabilities({ tools: { listChanged: undefined } });
  return server;
}

/** The request as the Fetch API has it, which the SDK's web-standard transport takes. */
function toWebRequest(request: HttpRequest): Request {
  const query = new URLSearchParams(Object.entries(request.query).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) headers.set(name, value);
  // Every answer here is JSON (no streams): a client that did not name both types the transport wants is served all the same.
  headers.set("accept", "application/json, text/event-stream");
  headers.set("content-type", "application/json");
  return new Request(`http://threadwise.invalid${request.path}${query ? `?${query}` : ""}`, {
    method: request.method,
    headers,
    body: request.body,
  });
}

async function toHttpResponse(response: Response): Promise<HttpResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, body: await response.text() };
}

/**
 * The product's own MCP endpoint, Streamable HTTP in stateless mode (no session: each POST is a
 * fresh server for its verified caller, as a Lambda needs) with JSON answers. The token is checked
 * exactly as the HTTP API checks it, before anything is parsed; GET and DELETE are 405, which the
 * transport's specification allows a server without server-initiated messages or sessions.
 */
export function mcpRoutes(deps: McpRoutesDeps): Route[] {
  return [
    {
      method: "POST",
      pattern: new RegExp(`^${MCP_ENDPOINT_PATH}$`),
      handler: async (request) => {
        const caller = await deps.authenticate(request);
        const body = parseJsonBody(request, mcpMessageBody);
        const server = threadwiseMcpServer(deps, caller);
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        try {
          await server.connect(transport);
          return await toHttpResponse(await transport.handleRequest(toWebRequest(request), { parsedBody: body }));
        } finally {
          await server.close();
        }
      },
    },
  ];
}
