import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText, type ConverseRequest } from "../support/converse-endpoint.js";
import { startKmsEndpoint, type KmsEndpoint } from "../support/kms-endpoint.js";
import { startOAuthMcpServer, type OAuthMcpServer } from "../support/oauth-mcp-server.js";
import { jwtClaims, sqsEvent, sqsRecord } from "./support/events.js";
import { startHarness, type Harness } from "./support/harness.js";

/** What the stack sets with `mcpOAuth=true`: the key's ARN and the API's own callback (infra/threadwise-stack.ts). */
const KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/0b4e1c4a-1111-2222-3333-444455556666";
const CALLBACK = "https://abc123.execute-api.us-east-1.amazonaws.com/v1/mcp/oauth/callback";

let h: Harness;
let kms: KmsEndpoint;
let crm: OAuthMcpServer;
const alice = jwtClaims("alice", { tenant: "acme" });

const toolNames = (request: ConverseRequest) => (request.toolConfig?.tools ?? []).flatMap((t) => ("toolSpec" in t ? [t.toolSpec.name] : []));
const lastResultText = (request: ConverseRequest) =>
  request.messages
    .at(-1)
    ?.content.flatMap((b) => ("toolResult" in b ? b.toolResult.content.flatMap((c) => ("text" in c ? [c.text] : [])) : []))
    .join("") ?? "";

beforeAll(async () => {
  [kms, crm] = await Promise.all([startKmsEndpoint(), startOAuthMcpServer()]);
  h = await startHarness({
    env: {
      ...kms.environment,
      MCP_SERVERS: JSON.stringify([
        { name: "crm", transport: { kind: "streamable-http", url: crm.mcpUrl }, auth: { kind: "oauth" }, approvals: { whoami: { require: "never" } } },
      ]),
      MCP_OAUTH_KMS_KEY_ID: KEY_ARN,
      MCP_OAUTH_REDIRECT_URL: CALLBACK,
      // KMS here is the MCP tokens' one-key stand-in, which makes no keys: contents stay clear in this file (sealing: the other function tests).
      CONTENT_ENCRYPTION: "off",
      // The CRM and its authorization server run on this machine: loopback allowed explicitly (docs/mcp.md, "Egress").
      MCP_EGRESS_ALLOW: "127.0.0.0/8",
    },
    converse: {
      // The model calls the crm tool it is offered (the sign-in tool, or whoami once signed in), then quotes its result.
      respond: (request) => {
        const result = lastResultText(request);
        if (result) return { text: result };
        const names = toolNames(request);
        const tool = names.includes("crm__whoami") ? "crm__whoami" : names.includes("crm__sign_in") ? "crm__sign_in" : undefined;
        // "confirm XXXX-XXXX": the user gives the code the sign-in page showed; the model passes it to the sign-in tool.
        const code = /confirm ([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(lastUserText(request))?.[1];
        if (tool === "crm__sign_in" && code) return { toolUses: [{ name: tool, input: { code } }] };
        return tool ? { toolUses: [{ name: tool, input: {} }] } : { text: "no crm tool" };
      },
    },
  });
});
afterAll(async () => {
  await h?.close();
  await Promise.all([kms?.close(), crm?.close()]);
});

/** Queues an async turn through the api function and runs it in the worker function; returns the turn's answer. */
async function workerTurn(content: string): Promise<string> {
  const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
  const id = created.json.conversationId as string;
  const before = h.aws.sent.length;
  const accepted = await h.api({
    method: "POST",
    path: `/v1/conversations/${id}/messages`,
    routeKey: "POST /v1/conversations/{id}/messages",
    claims: alice,
    query: { async: "true" },
    body: { content },
  });
  expect(accepted.status).toBe(202);
  expect((await h.worker(sqsEvent(sqsRecord(h.aws.sent[before])))).batchItemFailures).toEqual([]);
  const turn = await h.api({
    method: "GET",
    path: `/v1/conversations/${id}/turns/${accepted.json.turnId}`,
    routeKey: "GET /v1/conversations/{id}/turns/{turnId}",
    claims: alice,
  });
  expect(turn.json.status).toBe("completed");
  return turn.json.answer as string;
}

describe("functions/worker", () => {
  describe("handler", () => {
    it("offers an oauth server's sign-in tool, its link back to the stage's callback; its tools after the api's callback, tokens via KMS", async () => {
      const answer = await workerTurn("what is in the crm?");
      const link = /https?:\/\/\S+\/authorize\?\S+/.exec(answer)?.[0];
      expect(link).toBeDefined();
      expect(new URL(link as string).searchParams.get("redirect_uri")).toBe(CALLBACK);

      // Alice's browser signs in and comes back to the API's callback, served by the api function.
      const back = new URL(await crm.signIn(link as string, "alice"));
      expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
      const callback = await h.api({
        method: "GET",
        path: back.pathname,
        routeKey: "GET /v1/mcp/oauth/callback",
        query: Object.fromEntries(back.searchParams),
      });
      expect(callback.status).toBe(200);
      expect(callback.json).toMatchObject({ status: "confirm", server: "crm" });
      expect(kms.targets).toContain(`TrentService.GenerateDataKey ${KEY_ARN} AES_256`);

      // Alice gives the page's code in her conversation: the sign-in tool finishes it for her.
      const confirmed = await workerTurn(`confirm ${callback.json.code as string}`);
      expect(confirmed).toContain("signed in to crm");

      // A later queued turn calls the server's own tool with Alice's token, opened through KMS (the
      // container's sign-in state may still offer the sign-in tool for one turn, which then says she is signed in).
      let answer2 = await workerTurn("who am I in the crm?");
      if (!answer2.includes("alice")) answer2 = await workerTurn("who am I in the crm, now?");
      expect(answer2).toContain("alice");
      expect(crm.calls).toEqual(["alice"]);
      expect(kms.targets.every((t) => t.includes(KEY_ARN))).toBe(true);
    });
  });
});
