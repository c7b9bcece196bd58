import type { LambdaFunctionURLEvent, StreamifyHandler } from "aws-lambda";
import { Gate } from "../support/gate.js";
import { startOidcIssuer, type OidcIssuer } from "../support/oidc-issuer.js";
import { parseEvents } from "../support/sse-client.js";
import { functionUrlEvent, jwtClaims, lambdaContext } from "./support/events.js";
import { startHarness, type Harness } from "./support/harness.js";
import { installAwsLambdaGlobal, invokeStreaming } from "./support/streaming-runtime.js";

let h: Harness;
let oidc: OidcIssuer;
let stream: StreamifyHandler<LambdaFunctionURLEvent, void>;
/** Holds the model's answer until the test has seen the stream begin. */
const modelGate = new Gate();

beforeAll(async () => {
  // The issuer the HTTP API's authorizer trusts; the stream function verifies tokens against it itself.
  oidc = await startOidcIssuer("threadwise");
  h = await startHarness({
    env: { JWT_ISSUER: oidc.issuer, JWT_AUDIENCE: "threadwise" },
    converse: {
      respond: async () => {
        await modelGate.pass();
        return { text: "streamed answer" };
      },
    },
  });
  // The Node.js runtime's global, which the handler calls at import.
  installAwsLambdaGlobal();
  stream = (await import("../../functions/stream.js")).handler as unknown as StreamifyHandler<LambdaFunctionURLEvent, void>;
});
afterAll(async () => {
  modelGate.open();
  await Promise.all([h?.close(), oidc?.close()]);
});

const aliceToken = () => oidc.sign("alice", { claims: { tenant: "acme" } });

async function newConversation(): Promise<string> {
  const created = await h.api({
    method: "POST",
    path: "/v1/conversations",
    routeKey: "POST /v1/conversations",
    claims: jwtClaims("alice", { tenant: "acme" }),
  });
  expect(created.status).toBe(201);
  return created.json.conversationId as string;
}

/** One request through the Function URL; the whole response once the handler finished. */
function invoke(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  return invokeStreaming(stream, functionUrlEvent({ method, path, headers, body }), lambdaContext("test-threadwise-stream", 900_000));
}

const ask = (id: string, headers: Record<string, string>) => invoke("POST", `/v1/conversations/${id}/messages`, headers, { content: "stream this" });

describe("functions/stream (Function URL, response streaming)", () => {
  it("returns 404 in the API's error shape for a path the streaming URL does not serve, with a valid token", async () => {
    const { finished } = invoke("GET", "/v1/conversations", { authorization: `Bearer ${await aliceToken()}` });
    const response = await finished;
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toMatchObject({ error: { code: "not_found" } });
  });

  it("returns 401 without a token and with a token the issuer did not sign, and calls no model", async () => {
    const id = await newConversation();
    const before = h.converse.requests.length;
    for (const headers of [{} as Record<string, string>, { authorization: `Bearer ${await oidc.sign("alice", { foreignKey: true })}` }]) {
      const response = await ask(id, { ...headers, accept: "text/event-stream" }).finished;
      expect(response.statusCode).toBe(401);
      expect(JSON.parse(response.body)).toMatchObject({ error: { code: "unauthorized" } });
    }
    expect(h.converse.requests.length).toBe(before);
  });

  it("returns 406 to a POST that does not ask for text/event-stream, and calls no model", async () => {
    const id = await newConversation();
    const before = h.converse.requests.length;
    const response = await ask(id, { authorization: `Bearer ${await aliceToken()}`, accept: "application/json" }).finished;
    expect(response.statusCode).toBe(406);
    expect(JSON.parse(response.body)).toMatchObject({ error: { code: "not_acceptable" } });
    expect(h.converse.requests.length).toBe(before);
  });

  it("takes the bearer token from x-threadwise-authorization behind CloudFront, whose SigV4 signature holds Authorization", async () => {
    const id = await newConversation();
    const sigV4 = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261202/us-east-1/lambda/aws4_request, SignedHeaders=host;x-amz-date, Signature=00";
    const signedOnly = await ask(id, { authorization: sigV4, accept: "application/json" }).finished;
    expect(signedOnly.statusCode).toBe(401);
    // Past the token check: the 406 comes after it (and before anything runs).
    const withToken = await ask(id, { authorization: sigV4, "x-threadwise-authorization": `Bearer ${await aliceToken()}`, accept: "application/json" })
      .finished;
    expect(withToken.statusCode).toBe(406);
  });

  it("streams a turn's events as they come: status and turn while the model still holds the answer, then text and done", async () => {
    const id = await newConversation();
    const { stream: received, finished } = ask(id, { authorization: `Bearer ${await aliceToken()}`, accept: "text/event-stream" });
    const [begun] = await Promise.all([received.until((r) => parseEvents(r.body).length > 0), modelGate.reached]);
    expect(begun.statusCode).toBe(200);
    expect(begun.headers["content-type"]).toMatch(/^text\/event-stream/);
    const soFar = parseEvents(received.received().body);
    expect(soFar[0]).toMatchObject({ event: "turn", data: { conversationId: id } });
    expect(soFar.map((e) => e.event)).not.toContain("done");
    modelGate.open();
    const events = parseEvents((await finished).body);
    expect(events.map((e) => e.event).join(" ")).toMatch(/^turn progress( text)+ done$/);
    expect(events.flatMap((e) => (e.event === "text" ? [e.data.delta] : [])).join("")).toBe("streamed answer");
    expect(events.at(-1)).toMatchObject({ event: "done", data: { answer: "streamed answer" } });
    const turn = await h.api({
      method: "GET",
      path: events[0].data.location,
      routeKey: "GET /v1/conversations/{id}/turns/{turnId}",
      claims: jwtClaims("alice", { tenant: "acme" }),
    });
    expect(turn.json).toMatchObject({ status: "completed", answer: "streamed answer" });
  });
});
