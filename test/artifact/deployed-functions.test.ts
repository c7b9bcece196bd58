import { Client } from "@langchain/langgraph-sdk";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CREDENTIAL_SECRET_NAMES, CREDENTIAL_SECRETS } from "../../lib/config/credentials.js";
import { DATABASE_SETUP_VERSION } from "../../lib/store/database.js";
import { BUNDLE_FILE } from "../../infra/bundling/bundling.js";
import { appMention, envelope, TEAM, USER } from "../channels/slack/fixtures.js";
import { messageActivity, PERSONAL_CONVERSATION, USER_AAD } from "../channels/teams/fixtures.js";
import { startLocalAws, type LocalAws, type SentMessage } from "../functions/support/aws-endpoints.js";
import { apiEvent, jwtClaims, sqsEvent, sqsRecord, type ApiEventInput } from "../functions/support/events.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../support/converse-endpoint.js";
import { APPROVAL_SWEEP_EVENT } from "../../lib/approvals/sweep-event.js";
import { TURN_RECOVERY_EVENT } from "../../lib/agent/turn-recovery-event.js";
import { mongoUri, openTestDatabase, type TestDatabase } from "../support/mongo.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { bsonString, LOOPBACK_TLS, startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { resolveReferences, synthesizeDeployedStack, type DeployedStack } from "./support/deployed-stack.js";
import { startFunctionUrl, type FunctionUrl } from "./support/function-url.js";
import { FunctionError, FunctionProcess } from "./support/lambda-runtime.js";
import { startOidcIssuer, type OidcIssuer } from "../support/oidc-issuer.js";
import { Gate } from "../support/gate.js";
import { runtimeSdkDirectory } from "./support/runtime-sdk.js";
import { startHttpApi, type HttpApi } from "./support/http-api.js";
import { startHostileServer } from "../support/mcp-servers.js";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { KMS } from "@aws-sdk/client-kms";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { type ContentKeyDocument, KmsTenantKeys } from "../../lib/crypto/kms-tenant-keys.js";
import { CONTENT_KEYS_COLLECTION, type TenantRef } from "../../lib/crypto/tenant-keys.js";
import { startKmsKeysEndpoint, type KmsKeysEndpoint } from "../support/kms-keys-endpoint.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * The artifact tier: the stack synthesized once with its bundles, each function run from cdk.out
 * in its own Node 22 process with exactly the environment its template gives it (references
 * resolved to local stand-ins, as CloudFormation resolves them to the stack's resources), the AWS
 * SDK only from NODE_PATH, MongoDB behind a TLS proxy, and real-shaped events.
 */

/** Shorter than the default 60 s, so that a freeze outlasting it fits in a test; a documented stage option. */
const MAX_IDLE_SECONDS = 2;
const BOT_TOKEN = "xoxb-artifact";
const TEAMS_PASSWORD = "artifact-password";

let stack: DeployedStack;
let database: TestDatabase;
let proxy: TcpProxy;
let aws: LocalAws;
let converse: ConverseEndpoint;
let slackApi: SlackApiEndpoint;
let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let nodePath: string;
let oidc: OidcIssuer;
let streamingUrl: FunctionUrl;
/** KMS at its HTTP boundary: the functions make, use and read tenants' content keys there (`AWS_ENDPOINT_URL_KMS`). */
let kms: KmsKeysEndpoint;
/** An MCP server over Streamable HTTP whose `forecast` (read-only, an output schema) the api and worker functions are given through `MCP_SERVERS`. */
let mcp: Awaited<ReturnType<typeof startHostileServer>>;
/** Holds the model's second call of a "stream:" question until the test opens it. */
let modelGate: Gate | undefined;
const processes: FunctionProcess[] = [];
const warm = new Map<string, FunctionProcess>();

const alice = jwtClaims("alice", { tenant: "acme" });
const fullCredentials = () => ({
  mongodbUri: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true&tls=true&tlsCAFile=${LOOPBACK_TLS.certFile}`,
  slackSigningSecret: TEST_SLACK_SIGNING_SECRET,
  slackBotToken: BOT_TOKEN,
  teamsAppId: TEST_APP_ID,
  teamsAppPassword: TEAMS_PASSWORD,
});

beforeAll(async () => {
  database = await openTestDatabase("artifact");
  // The issuer the HTTP API's authorizer trusts, which the streaming function verifies against itself.
  oidc = await startOidcIssuer("threadwise");
  // Follow-ups wait for their requester's approval; the "stream:" questions search the conversation; no other turn calls a tool.
  stack = synthesizeDeployedStack({
    stage: "artifact",
    jwtIssuer: oidc.issuer,
    mongodbDb: database.dbName,
    mongodbMaxIdleSeconds: MAX_IDLE_SECONDS,
    toolApprovals: { create_follow_up: { require: "always" } },
    // The tier asks many turns of one user within a minute; the stage's default limits (10 turns a
    // minute, 3 at once) are held by test/limits, and admission still runs here under these.
    limits: { user: { turnsPerMinute: 10_000, concurrentTurns: 100, concurrentStreams: 100 } },
  });
  nodePath = runtimeSdkDirectory();
  proxy = await startTcpProxy(Number(new URL(mongoUri().replace("mongodb://", "http://")).port), { tls: true });
  aws = await startLocalAws();
  converse = await startConverseEndpoint({ respond });
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN });
  issuer = await startBotFrameworkIssuer();
  connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: TEAMS_PASSWORD });
  streamingUrl = await startFunctionUrl(() => container("stream"));
  mcp = await startHostileServer({ forecast: true });
  kms = await startKmsKeysEndpoint();
}, 240_000);

afterAll(async () => {
  for (const p of processes) await p.stop();
  await Promise.all([
    aws?.close(),
    converse?.close(),
    slackApi?.close(),
    issuer?.close(),
    connector?.close(),
    oidc?.close(),
    streamingUrl?.close(),
    mcp?.stop(),
    kms?.close(),
  ]);
  await proxy?.close();
  await database?.cleanup();
});

/**
 * Answers the question; asks for a follow-up when told to, and then says what the tool answered.
 * A "stream:" question writes text, searches the conversation, and answers once `modelGate` opens.
 */
async function respond(request: ConverseRequest): Promise<ScriptedReply> {
  const last = request.messages[request.messages.length - 1];
  const result = last.content.flatMap((b) => ("toolResult" in b ? b.toolResult.content.flatMap((c) => ("text" in c ? [c.text] : [])) : []));
  const text = lastUserText(request);
  // The question, also when the last message holds only tool results.
  const asked = request.messages.findLast((m) => m.role === "user" && m.content.some((b) => "text" in b && b.text.startsWith("stream:")));
  if (asked) {
    if (result.length === 0) return { text: "Let me look.", toolUses: [{ name: "search_conversation", input: { query: "anything" } }] };
    await modelGate?.pass();
    return { text: "streamed answer" };
  }
  if (result.length > 0) return { text: `tool said: ${result.join(" ")}` };
  if (text.startsWith("mcp:")) return { toolUses: [{ name: MCP_TOOL, input: { city: text.slice("mcp:".length).trim() } }] };
  if (text.startsWith("follow up:")) return { toolUses: [{ name: "create_follow_up", input: { title: text.slice("follow up:".length).trim() } }] };
  return { text: `answer to: ${text}` };
}

const MCP_TOOL = "records__forecast";
const mcpServers = () => JSON.stringify([{ name: "records", transport: { kind: "streamable-http", url: mcp.url }, tools: ["forecast"] }]);

/** A new container of the named function (a cold start), its references resolved to the stand-ins; later requests reuse it, as Lambda does. */
async function coldStart(name: string): Promise<FunctionProcess> {
  const artifact = resolveReferences(stack.functions[name], stack.template, (_logicalId, resource) => {
    if (resource.Type === "AWS::SecretsManager::Secret") {
      const secret = CREDENTIAL_SECRET_NAMES.find((n) => String(resource.Properties.Name).endsWith(`/threadwise/${CREDENTIAL_SECRETS[n].name}`));
      return secret && aws.secretArns[secret];
    }
    if (resource.Type === "AWS::SQS::Queue" && String(resource.Properties.QueueName).endsWith("-turns.fifo")) return aws.queueUrl;
    if (resource.Type === "AWS::Lambda::Url") return streamingUrl.url;
    return undefined;
  });
  const fn = await FunctionProcess.start(artifact, {
    nodePath,
    services: {
      AWS_ENDPOINT_URL_SECRETS_MANAGER: aws.url,
      AWS_ENDPOINT_URL_SQS: aws.url,
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: converse.url,
      AWS_ENDPOINT_URL_KMS: kms.url,
      SLACK_API_URL: slackApi.slackApiUrl,
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
      // A deployment's MCP servers are its configuration, not the template's (docs/mcp.md): the functions that run turns get one.
      // The MCP server runs on this machine: loopback allowed explicitly, as an operator would allow a private network.
      ...(name === "api" || name === "worker" ? { MCP_SERVERS: mcpServers(), MCP_EGRESS_ALLOW: "127.0.0.0/8" } : {}),
    },
  });
  processes.push(fn);
  warm.set(name, fn);
  return fn;
}

/** The function's warm container, started on first use. */
async function container(name: string): Promise<FunctionProcess> {
  return warm.get(name) ?? coldStart(name);
}

type HttpResult = { statusCode: number; headers?: Record<string, string>; body?: string };

/** The cipher of the conversations' tenants: the functions sealed their contents (CONTENT_KEYS=kms), with keys in the KMS stand-in. */
function tenantsCipher(): FieldCipher {
  const client = new KMS({ endpoint: kms.url, region: "us-east-1", credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" } });
  const keys = new KmsTenantKeys(client, database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION));
  const conversations = database.db.collection<{ _id: string; owner: TenantRef }>("conversations");
  return new FieldCipher({ keys, tenantOf: async (id) => (await conversations.findOne({ _id: id }))!.owner });
}

/** A follow-up's title as its owner's tenant key opens it. */
async function followUpTitle(doc: Record<string, unknown>): Promise<string> {
  return tenantsCipher().openText(String(doc.conversationId), { collection: "follow_ups", id: doc._id as string, field: "title" }, doc.title as never);
}

async function api(input: ApiEventInput): Promise<{ status: number; headers: Record<string, string>; json: any }> {
  const result = await (await container("api")).invoke<HttpResult>(apiEvent(input));
  return { status: result.statusCode, headers: result.headers ?? {}, json: result.body ? JSON.parse(result.body) : undefined };
}

async function runWorker(message: SentMessage): Promise<unknown> {
  return (await container("worker")).invoke(sqsEvent(sqsRecord(message)));
}

async function runWorkerBatch(messages: SentMessage[]): Promise<unknown> {
  return (await container("worker")).invoke(sqsEvent(...messages.map((m) => sqsRecord(m))));
}

function lastSent(before: number): SentMessage {
  expect(aws.sent.length).toBe(before + 1);
  return aws.sent[before];
}

/** A new conversation with one turn asked with `Prefer: respond-async`, and the message the api function queued for it. */
/** The api function's request for a turn of one of alice's conversations. */
function turnRequest(id: string, turnId: string) {
  return { method: "GET", path: `/v1/conversations/${id}/turns/${turnId}`, routeKey: "GET /v1/conversations/{id}/turns/{turnId}", claims: alice };
}

async function queuedTurn(content: string, requestId?: string): Promise<{ id: string; turnId: string; message: SentMessage }> {
  const id = (await api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice })).json.conversationId as string;
  const before = aws.sent.length;
  const accepted = await api({
    method: "POST",
    path: `/v1/conversations/${id}/messages`,
    routeKey: "POST /v1/conversations/{id}/messages",
    claims: alice,
    headers: { prefer: "respond-async" },
    body: { content },
    requestId,
  });
  expect(accepted.status).toBe(202);
  return { id, turnId: accepted.json.turnId as string, message: lastSent(before) };
}

/** A CloudFormation custom resource request whose answer lands in `responses`. */
async function customResourceEndpoint(): Promise<{ url: string; responses: Record<string, any>[]; close(): Promise<void> }> {
  const responses: Record<string, any>[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (c: Buffer) => chunks.push(c));
    request.on("end", () => {
      responses.push({ method: request.method, contentType: request.headers["content-type"], ...JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cfn-response?X-Amz-Signature=x`,
    responses,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

function createEvent(responseUrl: string) {
  return {
    RequestType: "Create",
    ServiceToken: "arn:aws:lambda:us-east-1:123456789012:function:artifact-threadwise-setup",
    ResponseURL: responseUrl,
    StackId: "arn:aws:cloudformation:us-east-1:123456789012:stack/artifact-threadwise/0f0e",
    RequestId: "b1b2c3d4-0000-4000-8000-000000000001",
    LogicalResourceId: "DatabaseSetup",
    ResourceType: "Custom::ThreadwiseDatabaseSetup",
    ResourceProperties: { ServiceToken: "arn:aws:lambda:us-east-1:123456789012:function:artifact-threadwise-setup", Version: String(DATABASE_SETUP_VERSION) },
  };
}

describe("deployed functions (cdk.out bundles, Node 22, the template's environment)", () => {
  describe("setup (the deploy step)", () => {
    it("returns SUCCESS to CloudFormation and skips, saying why, while the database secret is still empty", async () => {
      aws.setCredentials({});
      const cfn = await customResourceEndpoint();
      const before = proxy.accepted;
      const setup = await coldStart("setup");
      expect(await setup.invoke(createEvent(cfn.url))).toEqual({ status: "skipped-no-uri" });
      expect(cfn.responses).toEqual([
        expect.objectContaining({ method: "PUT", contentType: "", Status: "SUCCESS", Data: { Status: "skipped-no-uri" }, LogicalResourceId: "DatabaseSetup" }),
      ]);
      expect(setup.logs()).toContainEqual(expect.objectContaining({ message: "database setup skipped" }));
      expect(proxy.accepted).toBe(before);
      await cfn.close();
    });

    it("makes every index and records the version once the secret is filled in", async () => {
      aws.setCredentials(fullCredentials());
      const cfn = await customResourceEndpoint();
      expect(await (await coldStart("setup")).invoke(createEvent(cfn.url))).toEqual({ status: "set-up" });
      expect(cfn.responses[0]).toMatchObject({ Status: "SUCCESS", Data: { Status: "set-up" } });
      expect(await database.db.collection("setup").findOne({})).toMatchObject({ version: DATABASE_SETUP_VERSION });
      const names = async (collection: string) => (await database.db.collection(collection).indexes()).map((i) => i.name);
      expect(await names("conversations")).toContain("channel_key");
      expect(await names("channel_events")).toContain("ttl");
      await cfn.close();
    });
  });

  describe("webhooks", () => {
    it("returns 401 to a Slack request with a wrong signature, having opened no MongoDB connection and queued nothing", async () => {
      const slack = await coldStart("slack");
      const before = { connections: proxy.accepted, sent: aws.sent.length };
      const body = envelope(appMention());
      const result = await slack.invoke<HttpResult>(
        apiEvent({
          method: "POST",
          path: "/slack/events",
          routeKey: "POST /slack/events",
          body,
          headers: signSlackRequest(body, { secret: "not-the-signing-secret" }),
        }),
      );
      expect(result.statusCode).toBe(401);
      expect({ connections: proxy.accepted, sent: aws.sent.length }).toEqual(before);
    });

    it("returns 401 to a Teams activity without a token, having opened no MongoDB connection and queued nothing", async () => {
      const teams = await coldStart("teams");
      const before = { connections: proxy.accepted, sent: aws.sent.length };
      const result = await teams.invoke<HttpResult>(
        apiEvent({ method: "POST", path: "/teams/messages", routeKey: "POST /teams/messages", body: messageActivity(connector.serviceUrl) }),
      );
      expect(result.statusCode).toBe(401);
      expect({ connections: proxy.accepted, sent: aws.sent.length }).toEqual(before);
    });

    it("returns bundles that sign MONGODB-AWS authentication with their own aws4 and the runtime's credential providers", () => {
      for (const name of ["api", "worker", "slack", "teams", "setup", "stream"]) {
        const code = readFileSync(join(stack.functions[name].codeDirectory, BUNDLE_FILE), "utf8");
        expect(code, name).not.toMatch(/[\w$]+\(["']aws4["']\)/);
        expect(code, name).toContain("AWS4-HMAC-SHA256");
        expect(code, name).toMatch(/[\w$]+\(["']@aws-sdk\/credential-providers["']\)/);
      }
      expect(existsSync(join(nodePath, "@aws-sdk/credential-providers/package.json"))).toBe(true);
    });

    it("returns webhook bundles without the graph, the tools or the app, which the worker's holds", () => {
      const code = (name: string) => readFileSync(join(stack.functions[name].codeDirectory, BUNDLE_FILE), "utf8");
      // Markers of LangGraph's graph, the SQL tool's input schema and the turn runner.
      const markers = ["StateGraph", "One read-only SELECT", "turn is already running"];
      const worker = code("worker");
      expect(markers.filter((m) => !worker.includes(m))).toEqual([]);
      for (const name of ["slack", "teams"])
        expect(
          markers.filter((m) => code(name).includes(m)),
          name,
        ).toEqual([]);
    });
  });

  describe("api", () => {
    it("returns the answer of a turn run in the request, and the routes the console reads", async () => {
      const created = await api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
      expect(created.status).toBe(201);
      const id = created.json.conversationId as string;
      const answered = await api({
        method: "POST",
        path: `/v1/conversations/${id}/messages`,
        routeKey: "POST /v1/conversations/{id}/messages",
        claims: alice,
        body: { content: "What is the capital of France?" },
      });
      expect(answered).toMatchObject({ status: 200, json: { answer: "answer to: What is the capital of France?" } });
      const state = await api({ method: "GET", path: `/v1/conversations/${id}/state`, routeKey: "GET /v1/conversations/{id}/state", claims: alice });
      expect(state.status).toBe(200);
      const turns = await api({ method: "GET", path: `/v1/conversations/${id}/turns`, routeKey: "GET /v1/conversations/{id}/turns", claims: alice });
      expect(turns.json.turns).toEqual([expect.objectContaining({ turnId: answered.json.turnId, status: "completed" })]);
    });

    it("seals a turn under the tenant's KMS key: CreateKey tagged with tenant and stage, data keys bound to the context, nothing clear", async () => {
      const marker = `artifact-marker-${Date.now().toString(36)}`;
      const before = kms.requests.length;
      const created = await api({
        method: "POST",
        path: "/v1/conversations",
        routeKey: "POST /v1/conversations",
        claims: jwtClaims("carol", { tenant: "initech" }),
      });
      const id = created.json.conversationId as string;
      const asked = { method: "POST", path: `/v1/conversations/${id}/messages`, routeKey: "POST /v1/conversations/{id}/messages" };
      const answered = await api({ ...asked, claims: jwtClaims("carol", { tenant: "initech" }), body: { content: `Remember ${marker}` } });
      expect(answered).toMatchObject({ status: 200, json: { answer: `answer to: Remember ${marker}` } });
      // Read back through the API: the function opens what it sealed.
      const messages = await api({
        method: "GET",
        path: `/v1/conversations/${id}/messages`,
        routeKey: "GET /v1/conversations/{id}/messages",
        claims: jwtClaims("carol", { tenant: "initech" }),
      });
      expect(JSON.stringify(messages.json)).toContain(marker);

      const tenant = JSON.stringify(["api", "initech"]);
      const requests = kms.requests.slice(before);
      const createKeys = requests.filter((r) => r.operation === "CreateKey");
      expect(createKeys.map((r) => r.input.Tags)).toEqual([
        [
          { TagKey: "threadwise:tenant", TagValue: tenant },
          { TagKey: "threadwise:deployment", TagValue: "artifact" },
        ],
      ]);
      const [arn] = (await database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION).findOne({ _id: tenant }))!.keys.map((k) => k.arn);
      for (const operation of ["GenerateDataKey", "Decrypt"]) {
        const calls = requests.filter((r) => r.operation === operation);
        expect(calls.length, operation).toBeGreaterThan(0);
        for (const call of calls) {
          expect(call.input.KeyId, operation).toBe(arn);
          expect(call.input.EncryptionContext, operation).toMatchObject({ "threadwise:tenant": tenant, "threadwise:collection": expect.any(String) });
        }
      }
      // The database holds no clear copy of what was said.
      const stored = await database.db.collection("messages").find({ conversationId: id }).toArray();
      expect(stored.length).toBeGreaterThan(0);
      expect(JSON.stringify(stored)).not.toContain(marker);
    });

    it("returns ready from /readyz once the database is set up", async () => {
      expect(await api({ method: "GET", path: "/readyz", routeKey: "GET /readyz" })).toMatchObject({ status: 200, json: { status: "ready" } });
    });
  });

  describe("stream (the Function URL, response streaming)", () => {
    type SseEvent = { id?: number; event: string; data: Record<string, unknown> };

    /** The server-sent events of a response, parsed as they arrive. */
    async function* sseEvents(response: Response): AsyncGenerator<SseEvent> {
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const fields = Object.fromEntries(
            buffer
              .slice(0, end)
              .split("\n")
              .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()]),
          );
          buffer = buffer.slice(end + 2);
          yield { ...(fields.id ? { id: Number(fields.id) } : {}), event: fields.event, data: JSON.parse(fields.data) };
        }
      }
    }

    /** The events up to and including the first `text`, leaving the rest unread. */
    async function eventsThroughFirstText(events: AsyncGenerator<SseEvent>): Promise<SseEvent[]> {
      const seen: SseEvent[] = [];
      for (let next = await events.next(); !next.done; next = await events.next()) {
        seen.push(next.value);
        if (next.value.event === "text") break;
      }
      return seen;
    }

    type StreamInit = { method?: string; token?: string; headers?: Record<string, string>; body?: unknown; signal?: AbortSignal };
    async function streamRequest(path: string, init: StreamInit = {}) {
      return fetch(new URL(path.slice(1), streamingUrl.url), {
        method: init.method ?? "GET",
        signal: init.signal,
        headers: {
          accept: "text/event-stream",
          ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
          ...(init.body ? { "content-type": "application/json" } : {}),
          ...init.headers,
        },
        body: init.body ? JSON.stringify(init.body) : undefined,
      });
    }

    const newConversation = async () =>
      (await api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice })).json.conversationId as string;
    const aliceToken = () => oidc.sign("alice", { claims: { tenant: "acme" } });

    // A failed assertion must not leave the model, and so the stream function's container, held.
    afterEach(() => modelGate?.open());

    it("streams the first text event while the model still holds the turn, then the rest, and resumes after Last-Event-ID", async () => {
      const id = await newConversation();
      modelGate = new Gate();
      const token = await aliceToken();
      const response = await streamRequest(`/v1/conversations/${id}/messages`, { method: "POST", token, body: { content: "stream: what changed?" } });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
      const events = sseEvents(response);
      const seen = await eventsThroughFirstText(events);
      // The gate is still shut: the model's next call cannot answer, so the turn has not ended, and its first text is here.
      expect(seen.map((e) => e.event)).toEqual(["turn", "progress", "text"]);
      expect(seen[2].data).toMatchObject({ modelCall: 0 });
      expect("Let me look.".startsWith(String(seen[2].data.delta))).toBe(true);
      await modelGate.reached;
      modelGate.open();
      for await (const event of events) seen.push(event);
      expect(seen.at(-1)).toMatchObject({ event: "done", data: { answer: "streamed answer" } });
      expect(seen.map((e) => e.event)).toEqual(expect.arrayContaining(["tool_started", "tool_finished"]));

      // Reconnecting after the first text: the same events after it, replayed from the store.
      const turnId = seen[0].data.turnId as string;
      const textId = seen[2].id!;
      const resumed = await streamRequest(`/v1/conversations/${id}/turns/${turnId}/events`, { token, headers: { "last-event-id": String(textId) } });
      expect(resumed.status).toBe(200);
      const replayed: SseEvent[] = [];
      for await (const event of sseEvents(resumed)) replayed.push(event);
      expect(replayed[0]).toMatchObject({ event: "turn", data: { turnId } });
      expect(replayed.slice(1).map((e) => [e.event, e.id])).toEqual(seen.filter((e) => e.id! > textId).map((e) => [e.event, e.id]));
      expect(replayed.at(-1)).toMatchObject({ event: "done", data: { answer: "streamed answer" } });
    });

    it("completes and records the turn of a client that went away after the first text, and replays the rest through the URL up to done", async () => {
      const id = await newConversation();
      modelGate = new Gate();
      const token = await aliceToken();
      const client = new AbortController();
      const response = await streamRequest(`/v1/conversations/${id}/messages`, {
        method: "POST",
        token,
        body: { content: "stream: and then?" },
        signal: client.signal,
      });
      const events = sseEvents(response);
      const seen = await eventsThroughFirstText(events);
      expect(seen.map((e) => e.event)).toEqual(["turn", "progress", "text"]);
      // The client goes away while the model holds the turn; only then may the turn go on.
      const gone = streamingUrl.nextClientGone();
      client.abort();
      await gone;
      await modelGate.reached;
      modelGate.open();

      const turnId = seen[0].data.turnId as string;
      const turnPath = turnRequest(id, turnId);
      let turn = await api(turnPath);
      for (const until = Date.now() + 10_000; ["queued", "running"].includes(turn.json.status) && Date.now() < until; turn = await api(turnPath))
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(turn.json).toMatchObject({ status: "completed", answer: "streamed answer" });

      const textId = seen[2].id!;
      const resumed = await streamRequest(`/v1/conversations/${id}/turns/${turnId}/events`, { token, headers: { "last-event-id": String(textId) } });
      expect(resumed.status).toBe(200);
      const replayed: SseEvent[] = [];
      for await (const event of sseEvents(resumed)) replayed.push(event);
      expect(replayed[0]).toMatchObject({ event: "turn", data: { turnId } });
      const rest = replayed.slice(1);
      // Every event after the last one the client saw, none missing: the ids follow on from it.
      expect(rest.map((e) => e.id)).toEqual(rest.map((_, i) => textId + 1 + i));
      expect(rest.map((e) => e.event)).toEqual(expect.arrayContaining(["tool_started", "tool_finished"]));
      expect(rest.at(-1)).toMatchObject({ event: "done", data: { answer: "streamed answer" } });
    });

    it("returns 401 to a token the issuer did not sign or meant for another audience, and runs nothing", async () => {
      const id = await newConversation();
      const before = { model: converse.requests.length, turns: await database.db.collection("turns").countDocuments() };
      for (const token of [await oidc.sign("alice", { foreignKey: true }), await oidc.sign("alice", { audience: "someone-else" }), undefined]) {
        const response = await streamRequest(`/v1/conversations/${id}/messages`, { method: "POST", token, body: { content: "stream: not me" } });
        expect(response.status).toBe(401);
        expect(await response.json()).toMatchObject({ error: { code: "unauthorized" } });
      }
      expect({ model: converse.requests.length, turns: await database.db.collection("turns").countDocuments() }).toEqual(before);
    });

    it("returns 404 in the API's error shape for a route the HTTP API serves, and 406 to a POST that does not ask for events", async () => {
      const token = await aliceToken();
      const listed = await streamRequest("/v1/conversations", { token });
      expect(listed.status).toBe(404);
      expect(await listed.json()).toMatchObject({ error: { code: "not_found" } });
      const id = await newConversation();
      const json = await streamRequest(`/v1/conversations/${id}/messages`, {
        method: "POST",
        token,
        headers: { accept: "application/json" },
        body: { content: "hi" },
      });
      expect(json.status).toBe(406);
    });

    it("serves the Agent Protocol to LangGraph's SDK client: a thread, a streamed run, its state, and another user's thread refused", async () => {
      const client = async (user: string) =>
        new Client({
          apiUrl: streamingUrl.url,
          defaultHeaders: { authorization: `Bearer ${await oidc.sign(user, { claims: { tenant: "acme" } })}` },
          callerOptions: { maxRetries: 0 },
        });
      const ada = await client("alice");
      const thread = await ada.threads.create();
      const events: string[] = [];
      for await (const part of ada.runs.stream(thread.thread_id, "threadwise", {
        input: { messages: [{ type: "human", content: "What is the capital of France?" }] },
        streamMode: ["values", "messages-tuple"],
      })) {
        events.push(part.event);
      }
      expect(events[0]).toBe("metadata");
      expect(events.at(-1)).toBe("values");
      const state = await ada.threads.getState(thread.thread_id);
      expect((state.values as { messages: { type: string; content: string }[] }).messages.map((m) => [m.type, m.content])).toEqual([
        ["human", "What is the capital of France?"],
        ["ai", "answer to: What is the capital of France?"],
      ]);
      await expect((await client("mallory")).threads.get(thread.thread_id)).rejects.toThrow(/404/);
    });

    it("has the api function answer 406 to an event stream, naming the streaming URL", async () => {
      const id = await newConversation();
      const refused = await api({
        method: "POST",
        path: `/v1/conversations/${id}/messages`,
        routeKey: "POST /v1/conversations/{id}/messages",
        claims: alice,
        headers: { accept: "text/event-stream" },
        body: { content: "stream please" },
      });
      expect(refused).toMatchObject({ status: 406, json: { error: { code: "not_acceptable", message: expect.stringContaining(streamingUrl.url) } } });
    });
  });

  describe("worker", () => {
    it("completes an async API turn queued by the api function", async () => {
      const { id, turnId, message } = await queuedTurn("Answer me later");
      expect(await runWorker(message)).toEqual({ batchItemFailures: [] });
      const turn = await api(turnRequest(id, turnId));
      expect(turn.json).toMatchObject({ status: "completed", answer: "answer to: Answer me later" });
    });

    it("continues the api request's X-Ray trace in the message and its correlation id in the worker's log lines", async () => {
      const apiProcess = await container("api");
      const printed = apiProcess.logs().length;
      const { turnId, message } = await queuedTurn("Trace me", "req-artifact-trace");
      const [, root] = /^Root=(1-[0-9a-f]{8}-[0-9a-f]{24});Parent=[0-9a-f]{16};Sampled=0$/.exec(message.traceHeader ?? "") ?? [];
      // The trace the runtime gave the api's invocation, which its log lines name.
      const requestLine = apiProcess
        .logs()
        .slice(printed)
        .find((l) => l.message === "request" && l.correlation_id === "req-artifact-trace");
      expect(root).toBeDefined();
      expect(requestLine).toMatchObject({ route: "POST /v1/conversations/{id}/messages", status: 202, xray_trace_id: root });
      expect(message.attributes).toEqual({ correlationId: "req-artifact-trace" });
      const worker = await container("worker");
      const workerPrinted = worker.logs().length;
      expect(await runWorker(message)).toEqual({ batchItemFailures: [] });
      const turnLine = worker
        .logs()
        .slice(workerPrinted)
        .find((l) => l.message === "turn job");
      expect(turnLine).toMatchObject({ correlation_id: "req-artifact-trace", turnId, outcome: "completed" });
    });

    it("answers a signed Slack mention in its thread, queued by the slack function", async () => {
      const before = aws.sent.length;
      const body = envelope(appMention({ ts: "1700009000.000100", event_ts: "1700009000.000100", text: "<@U0BOT> how are sales?" }));
      const slack = await container("slack");
      const result = await slack.invoke<HttpResult>(
        apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, headers: signSlackRequest(body) }),
      );
      expect(result.statusCode).toBe(200);
      expect(await runWorker(lastSent(before))).toEqual({ batchItemFailures: [] });
      expect(slackApi.posts.filter((p) => p.threadTs === "1700009000.000100").map((p) => p.text)).toEqual(["answer to: how are sales?"]);
    });

    it("answers a Teams activity through the Bot Connector, queued by the teams function", async () => {
      const before = aws.sent.length;
      const activity = messageActivity(connector.serviceUrl, { text: "how are sales in Teams?" });
      const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
      const teams = await container("teams");
      const result = await teams.invoke<HttpResult>(
        apiEvent({ method: "POST", path: "/teams/messages", routeKey: "POST /teams/messages", body: activity, headers: { authorization: `Bearer ${token}` } }),
      );
      expect(result.statusCode).toBe(202);
      expect(await runWorker(lastSent(before))).toEqual({ batchItemFailures: [] });
      expect(connector.replies).toEqual([
        expect.objectContaining({
          conversationId: PERSONAL_CONVERSATION,
          activityId: activity.id,
          activity: expect.objectContaining({ text: "answer to: how are sales in Teams?" }),
        }),
      ]);
    });
  });

  describe("MCP (the bundled SDK: its client with the Ajv stub and the zod validator, the endpoint's server)", () => {
    it("discovers the tool of the MCP server MCP_SERVERS names and calls it over Streamable HTTP in a worker turn", async () => {
      const asked = converse.requests.length;
      const { id, turnId, message } = await queuedTurn("mcp: Paris");
      expect(await runWorker(message)).toEqual({ batchItemFailures: [] });
      const turn = await api(turnRequest(id, turnId));
      expect(turn.json).toMatchObject({ status: "completed", answer: expect.stringContaining("Paris: 21 C") });
      const offered = converse.requests.slice(asked).flatMap((r) => r.body?.toolConfig?.tools ?? []);
      expect(offered.map((t) => ("toolSpec" in t ? t.toolSpec?.name : undefined))).toContain(MCP_TOOL);
      // The SDK checked the output schema's structuredContent with the validator the client passes: the SDK's own Ajv is a stub that throws.
      const code = readFileSync(join(stack.functions.worker.codeDirectory, BUNDLE_FILE), "utf8");
      expect(code).toContain("the MCP SDK's Ajv validator is left out of the Lambda bundles");
    });

    it("answers tools/list on POST /v1/mcp from the api bundle to the SDK's Client over HTTP", async () => {
      const httpApi: HttpApi = await startHttpApi(() => container("api"), alice);
      const client = new McpClient({ name: "artifact-tier", version: "1.0.0" });
      try {
        const headers = { authorization: "Bearer eyJhbGciOiJSUzI1NiJ9.verified-by-api-gateway.sig" };
        await client.connect(new StreamableHTTPClientTransport(new URL(`${httpApi.url}/v1/mcp`), { requestInit: { headers } }));
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual(["ask", "list_conversations", "read_conversation"]);
      } finally {
        await client.close();
        await httpApi.close();
      }
    });
  });

  describe("a tool call that waits for approval", () => {
    it("pauses the turn in the worker, takes the decision in the api, and runs the tool once in the resumed worker", async () => {
      const { id, turnId, message } = await queuedTurn("follow up: Call the supplier");
      const turnPath = turnRequest(id, turnId);
      expect(await runWorker(message)).toEqual({ batchItemFailures: [] });
      const waiting = await api(turnPath);
      expect(waiting.json).toMatchObject({
        status: "awaiting_approval",
        approvals: [expect.objectContaining({ tool: "create_follow_up", status: "pending" })],
      });
      const followUps = () => database.db.collection("follow_ups").countDocuments({ conversationId: id });
      expect(await followUps()).toBe(0);

      const before = aws.sent.length;
      const approvalId = waiting.json.approvals[0].approvalId as string;
      const decided = await api({
        method: "POST",
        path: `/v1/conversations/${id}/approvals/${approvalId}`,
        routeKey: "POST /v1/conversations/{id}/approvals/{approvalId}",
        claims: alice,
        body: { decision: "approve" },
      });
      expect(decided).toMatchObject({ status: 200, json: { decided: true, resumed: true } });
      const resume = lastSent(before);
      expect(await runWorker(resume)).toEqual({ batchItemFailures: [] });
      // SQS delivers at least once: the same job again runs nothing.
      expect(await runWorker(resume)).toEqual({ batchItemFailures: [] });

      expect((await api(turnPath)).json).toMatchObject({ status: "completed", answer: expect.stringContaining("tool said: Recorded") });
      expect(await followUps()).toBe(1);
    });

    it("edits a Slack call through the slack bundle: a modal with the bot token, then the edited call runs once in the resumed worker", async () => {
      const ts = "1700009100.000100";
      const before = aws.sent.length;
      const body = envelope(appMention({ ts, event_ts: ts, text: "<@U0BOT> follow up: Call the supplier" }));
      const slack = await container("slack");
      const slackEvent = (path: string, text: string, headers: Record<string, string>) =>
        slack.invoke<HttpResult>(apiEvent({ method: "POST", path, routeKey: `POST ${path}`, body: text, headers }));
      expect((await slackEvent("/slack/events", body, signSlackRequest(body))).statusCode).toBe(200);
      expect(await runWorker(lastSent(before))).toEqual({ batchItemFailures: [] });
      const post = slackApi.posts.find((p) => p.threadTs === ts && p.blocks)!;
      const actions = post.blocks!.find((b) => (b as { type: string }).type === "actions") as { elements: { action_id: string; value: string }[] };
      const edit = actions.elements.find((e) => e.action_id === "threadwise_approval_edit")!;
      const interact = (payload: Record<string, unknown>) => {
        const form = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
        return slackEvent("/slack/interactivity", form, { ...signSlackRequest(form), "content-type": "application/x-www-form-urlencoded" });
      };

      const click = { type: "block_actions", user: { id: USER }, team: { id: TEAM }, trigger_id: "7.1700009100.abc" };
      const message = { type: "message", channel_id: post.channel, message_ts: post.ts };
      expect((await interact({ ...click, container: message, actions: [{ action_id: edit.action_id, value: edit.value }] })).statusCode).toBe(200);
      const view = slackApi.views.find((v) => v.triggerId === click.trigger_id)!.view;
      const resumeFrom = aws.sent.length;
      const typed = JSON.stringify({ title: "Call the new supplier" });
      const submitted = await interact({
        type: "view_submission",
        user: { id: USER, team_id: TEAM },
        team: { id: TEAM },
        view: { ...view, id: "V1", state: { values: { args: { args: { type: "plain_text_input", value: typed } } } } },
      });
      expect(submitted).toMatchObject({ statusCode: 200 });
      expect(slackApi.updates.find((u) => u.ts === post.ts)?.text).toContain(`edited by <@${USER}>`);

      expect(await runWorker(lastSent(resumeFrom))).toEqual({ batchItemFailures: [] });
      const created = await database.db
        .collection("follow_ups")
        .find({ conversationId: edit.value.split(":")[0] })
        .toArray();
      expect(await Promise.all(created.map(followUpTitle))).toEqual(["Call the new supplier"]);
    });

    it("edits a Teams call through the teams bundle: the invoke answered with the refreshed card, the edited call run once by the worker", async () => {
      const teams = await container("teams");
      const teamsEvent = async (body: Record<string, unknown>) => {
        const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
        return teams.invoke<HttpResult>(
          apiEvent({ method: "POST", path: "/teams/messages", routeKey: "POST /teams/messages", body, headers: { authorization: `Bearer ${token}` } }),
        );
      };
      const before = aws.sent.length;
      const activity = messageActivity(connector.serviceUrl, { text: "follow up: Call the supplier" });
      expect((await teamsEvent(activity)).statusCode).toBe(202);
      expect(await runWorker(lastSent(before))).toEqual({ batchItemFailures: [] });
      type Action = { verb: string; data: { conversationId: string; approvalId: string } };
      const reply = connector.replies.find((r) => r.activityId === activity.id && Array.isArray(r.activity.attachments))!;
      const card = (reply.activity.attachments as { content: { actions: Action[] } }[])[0].content;
      const edit = card.actions.find((a) => a.verb === "threadwise.approval.edit")!;

      // Action.Execute "Edit" as Teams sends it: an invoke whose data carries the card's arguments box as typed.
      const resumeFrom = aws.sent.length;
      const typed = JSON.stringify({ title: "Call the new supplier" });
      const answered = await teamsEvent({
        ...messageActivity(connector.serviceUrl),
        type: "invoke",
        name: "adaptiveCard/action",
        text: undefined,
        value: { action: { type: "Action.Execute", verb: edit.verb, data: { ...edit.data, args: typed } } },
      });
      expect(answered.statusCode).toBe(200);
      const refreshed = JSON.parse(answered.body!) as { statusCode: number; type: string; value: { body: { text: string }[] } };
      expect(refreshed).toMatchObject({ statusCode: 200, type: "application/vnd.microsoft.card.adaptive" });
      expect(refreshed.value.body[0].text).toMatch(new RegExp(`^create_follow_up: edited by ${USER_AAD} at `));

      expect(await runWorker(lastSent(resumeFrom))).toEqual({ batchItemFailures: [] });
      const approval = await database.db.collection("approvals").findOne({ _id: edit.data.approvalId as never });
      expect(approval).toMatchObject({ status: "edited", decision: { kind: "edit" } });
      // Sealed at rest, the worker's edit included (the webhook handed it over): opened only with the tenant's key.
      const opened = (field: string, stored: unknown) =>
        tenantsCipher().openJson(String(approval?.conversationId), { collection: "approvals", id: String(approval?._id), field }, stored);
      expect(JSON.stringify(approval)).not.toContain("supplier");
      expect(await opened("args", approval?.args)).toEqual({ title: "Call the supplier" });
      expect(await opened("decision.args", approval?.decision.args)).toEqual({ title: "Call the new supplier" });
      const created = await database.db.collection("follow_ups").find({ turnId: approval?.turnId }).toArray();
      expect(await Promise.all(created.map(followUpTitle))).toEqual(["Call the new supplier"]);
      const answer = connector.replies.filter((r) => r.activityId === activity.id).at(-1);
      expect(answer?.activity.text).toContain("tool said: Recorded");
    });

    it("runs the schedule's sweep in the worker bundle", async () => {
      expect(await (await container("worker")).invoke(APPROVAL_SWEEP_EVENT)).toEqual({ expired: 0, resumed: 0, more: false });
    });

    it("skips the schedule's sweep, without a function error, while the database secret is still empty", async () => {
      aws.setCredentials({});
      try {
        const worker = await coldStart("worker");
        expect(await worker.invoke(APPROVAL_SWEEP_EVENT)).toEqual({ status: "skipped-no-uri" });
        expect(worker.logs()).toContainEqual(expect.objectContaining({ level: "WARN", message: "approval sweep skipped" }));
      } finally {
        aws.setCredentials(fullCredentials());
        // The next test's worker reads the filled-in secret.
        warm.delete("worker");
      }
    });
  });

  describe("a model that refuses the function's credentials", () => {
    it("gives the turn up, emits the failed-turn metric (EMF) by reason, and logs it at ERROR without the message", async () => {
      const { turnId, message } = await queuedTurn("a secret question");
      converse.setResponder(() => ({
        error: { status: 403, type: "AccessDeniedException", message: "You don't have access to the model with the specified model ID." },
      }));
      const worker = await container("worker");
      const printed = worker.output.length;
      try {
        // The first receive: a refusal for credentials is not retried.
        expect(await runWorker(message)).toEqual({ batchItemFailures: [] });
      } finally {
        converse.setResponder((request) => ({ text: `answer to: ${lastUserText(request)}` }));
      }
      const lines = worker.output.slice(printed).flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, any>];
        } catch {
          return [];
        }
      });
      const emf = lines.filter((l) => l._aws?.CloudWatchMetrics);
      const failed = emf.filter((l) => l.TurnsFailed === 1);
      expect(failed.map((l) => ({ namespace: l._aws.CloudWatchMetrics[0].Namespace, service: l.service, reason: l.reason }))).toEqual(
        expect.arrayContaining([
          { namespace: "Threadwise", service: "threadwise-artifact", reason: "model_denied" },
          { namespace: "Threadwise", service: "threadwise-artifact", reason: undefined },
        ]),
      );
      const errors = lines.filter((l) => l.level === "ERROR");
      expect(errors).toEqual([expect.objectContaining({ message: "turn given up", reason: "model_denied", error: "ModelCredentialsError", turnId })]);
      expect(worker.output.slice(printed).join("\n")).not.toContain("a secret question");
    });
  });

  describe("a frozen container", () => {
    it("answers its first request after a freeze within a few seconds, its connections dropped without a word meanwhile", async () => {
      const list = () => api({ method: "GET", path: "/v1/conversations", routeKey: "GET /v1/conversations", claims: alice });
      expect((await list()).status).toBe(200);
      const apiProcess = await container("api");
      apiProcess.freeze();
      proxy.dropSilently();
      // Longer than the template's MONGODB_MAX_IDLE_TIME_MS: the pooled connections are stale on thaw.
      await new Promise((resolve) => setTimeout(resolve, MAX_IDLE_SECONDS * 1000 + 500));
      apiProcess.thaw();
      const started = performance.now();
      const after = await list();
      const elapsedMs = performance.now() - started;
      expect(after.status).toBe(200);
      expect(elapsedMs).toBeLessThan(3_000);
    });

    it("answers its first request within 5 s after a freeze shorter than the idle time, its pooled connections dropped without a word", async () => {
      const list = () => api({ method: "GET", path: "/v1/conversations", routeKey: "GET /v1/conversations", claims: alice });
      expect((await list()).status).toBe(200);
      const apiProcess = await container("api");
      apiProcess.freeze();
      proxy.dropSilently();
      // Inside MONGODB_MAX_IDLE_TIME_MS: the pool reuses its connections, which are stale (a 20 s 503, twice, before).
      await new Promise((resolve) => setTimeout(resolve, MAX_IDLE_SECONDS * 1000 - 500));
      apiProcess.thaw();
      const started = performance.now();
      const after = await list();
      const elapsedMs = performance.now() - started;
      expect(after.status).toBe(200);
      expect(elapsedMs).toBeLessThan(5_000);
    });
  });

  describe("events as AWS sends them", () => {
    beforeAll(() => aws.setCredentials(fullCredentials()));

    it("has the api function answer a base64 body with a charset, and 400 (not 5xx) to a body that starts with a byte order mark", async () => {
      const id = (await api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice })).json.conversationId as string;
      const post = { method: "POST", path: `/v1/conversations/${id}/messages`, routeKey: "POST /v1/conversations/{id}/messages", claims: alice };
      const encoded = await api({
        ...post,
        body: { content: "Encoded, ünïcode" },
        base64: true,
        headers: { "content-type": "application/json; charset=utf-8" },
      });
      expect(encoded).toMatchObject({ status: 200, json: { answer: "answer to: Encoded, ünïcode" } });
      const marked = await api({ ...post, body: `\uFEFF${JSON.stringify({ content: "marked" })}` });
      expect(marked).toMatchObject({ status: 400, json: { error: { code: "invalid_request" } } });
    });

    it("has the slack function answer Slack's retry of an event (X-Slack-Retry-Num) 200 without queueing it again", async () => {
      const slack = await container("slack");
      const before = aws.sent.length;
      const body = envelope(appMention({ ts: "1700009200.000100", event_ts: "1700009200.000100", text: "<@U0BOT> once only" }));
      const deliver = (headers: Record<string, string>, base64 = false) =>
        slack.invoke<HttpResult>(apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, base64, headers }));
      expect((await deliver(signSlackRequest(body))).statusCode).toBe(200);
      const retry = { ...signSlackRequest(body), "x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout" };
      expect((await deliver(retry)).statusCode).toBe(200);
      expect((await deliver({ ...retry, "x-slack-retry-num": "2" }, true)).statusCode).toBe(200);
      expect(aws.sent.length).toBe(before + 1);
    });

    it("has the teams function answer 200 to activities it ignores, queueing none", async () => {
      const teams = await container("teams");
      const before = aws.sent.length;
      const ignored = [
        { type: "conversationUpdate", membersAdded: [{ id: "28:bot" }] },
        { type: "typing" },
        { type: "messageReaction", reactionsAdded: [{ type: "like" }] },
        { type: "installationUpdate", action: "add" },
        { type: "invoke", name: "signin/verifyState", value: { state: "123" } },
      ];
      for (const fields of ignored) {
        const activity = { ...messageActivity(connector.serviceUrl), text: undefined, ...fields };
        const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
        const headers = { authorization: `Bearer ${token}`, "content-type": "application/json; charset=utf-8" };
        const result = await teams.invoke<HttpResult>(
          apiEvent({ method: "POST", path: "/teams/messages", routeKey: "POST /teams/messages", body: activity, headers }),
        );
        expect(result.statusCode, fields.type).toBe(200);
      }
      expect(aws.sent.length).toBe(before);
    });

    it("has the worker drop unreadable records of a batch, run the good one, and answer a redelivered message once", async () => {
      const { id, turnId, message } = await queuedTurn("Beside the poison");
      const poison = [
        { ...message, messageId: "poison-not-json", body: "not json" },
        { ...message, messageId: "poison-not-a-job", body: JSON.stringify({ channel: "api", nonsense: true }) },
      ];
      expect(await runWorkerBatch([...poison, message])).toEqual({ batchItemFailures: [] });
      const turnPath = turnRequest(id, turnId);
      expect((await api(turnPath)).json).toMatchObject({ status: "completed", answer: "answer to: Beside the poison" });
      const modelCalls = converse.requests.length;
      // SQS delivers at least once: the same message again, received a second time.
      expect(await (await container("worker")).invoke(sqsEvent(sqsRecord(message, 2)))).toEqual({ batchItemFailures: [] });
      expect(converse.requests.length).toBe(modelCalls);
    });
  });

  describe("a conversation deleted while its turn waits in the queue", () => {
    beforeAll(() => aws.setCredentials(fullCredentials()));

    it("has the worker give the turn up on its first receive, as not found, rather than retry it as a conflict", async () => {
      const { id, message } = await queuedTurn("Deleted before the worker ran");
      const deleted = await api({ method: "DELETE", path: `/v1/conversations/${id}`, routeKey: "DELETE /v1/conversations/{id}", claims: alice });
      expect(deleted.status).toBe(204);
      const worker = await container("worker");
      const printed = worker.logs().length;
      const retries = aws.visibilityChanges.length;
      expect(await worker.invoke(sqsEvent(sqsRecord(message)))).toEqual({ batchItemFailures: [] });
      expect(aws.visibilityChanges.length).toBe(retries);
      const lines = worker.logs().slice(printed);
      expect(lines).toContainEqual(expect.objectContaining({ message: "turn given up", error: "NotFoundError", reason: "invalid", receiveCount: 1 }));
      expect(lines.filter((l) => l.message === "turn will be retried")).toEqual([]);
    });
  });

  describe("a credentials secret that cannot be read", () => {
    const denied = { type: "AccessDeniedException", message: "Access to KMS is not allowed" };
    beforeAll(() => aws.setCredentials(fullCredentials()));
    afterEach(() => aws.failSecret("database", undefined));

    it("has the setup function still answer CloudFormation (SUCCESS, status failed), so that the deploy does not wait an hour", async () => {
      aws.failSecret("database", denied);
      const cfn = await customResourceEndpoint();
      try {
        const setup = await coldStart("setup");
        expect(await setup.invoke(createEvent(cfn.url))).toEqual({ status: "failed" });
        expect(cfn.responses).toEqual([expect.objectContaining({ Status: "SUCCESS", Data: { Status: "failed" }, LogicalResourceId: "DatabaseSetup" })]);
      } finally {
        await cfn.close();
      }
    });

    it("keeps a container whose cold-start fetch failed: its first request gets 503 with Retry-After, and it serves once the secret reads", async () => {
      aws.failSecret("database", {
        type: "ResourceNotFoundException",
        message: "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT",
      });
      const apiProcess = await coldStart("api");
      // The fetch started at import fails before any invocation awaits it.
      await apiProcess.nextLog((l) => l.message === "credentials secret unreadable");
      const list = { method: "GET", path: "/v1/conversations", routeKey: "GET /v1/conversations", claims: alice };
      const refused = await api(list);
      expect(refused).toMatchObject({ status: 503, headers: { "retry-after": expect.any(String) }, json: { error: { code: "service_unavailable" } } });
      expect(apiProcess.logs()).toContainEqual(
        expect.objectContaining({ message: "credentials secret unreadable", secret: "database", error: "ResourceNotFoundException" }),
      );
      aws.failSecret("database", undefined);
      expect((await api(list)).status).toBe(200);
    });

    it("has the slack function answer 503, for Slack to retry, and the worker report the record as a batch item failure", async () => {
      aws.failSecret("database", denied);
      const body = envelope(appMention({ ts: "1700009300.000100", event_ts: "1700009300.000100" }));
      const slack = await coldStart("slack");
      const refused = await slack.invoke<HttpResult>(
        apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, headers: signSlackRequest(body) }),
      );
      expect(refused.statusCode).toBe(503);
      const { message } = await queuedTurn("Held by an unreadable secret");
      const worker = await coldStart("worker");
      expect(await worker.invoke(sqsEvent(sqsRecord(message)))).toEqual({ batchItemFailures: [{ itemIdentifier: message.messageId }] });
    });
  });
});

/**
 * The crash test of docs/recovery.md on the worker bundle: its container SIGKILLed at a point of
 * an approved turn's resume (found by the MongoDB command it was sending, held at the proxy),
 * the visibility timeout let pass (the lease's and the tool call's clocks moved back by it), the
 * same SQS message delivered again to a new container, and the schedule's recovery event run.
 */
describe("a worker killed mid-turn, its message delivered again (SQS redelivery)", () => {
  beforeAll(() => {
    aws.setCredentials(fullCredentials());
    // A container of its own, not one an earlier test started while the secret could not be read.
    warm.delete("worker");
    // The tier's model, which asks for the follow-up (an earlier test left a plain one answering).
    converse.setResponder(respond);
  });

  const turnsQueueVisibilityMs = () => {
    const queues = Object.values(stack.template.findResources("AWS::SQS::Queue"));
    const turns = queues.find((q) => String(q.Properties.QueueName).endsWith("-turns.fifo"));
    return Number(turns?.Properties.VisibilityTimeout) * 1000;
  };

  /** What SQS's wait does to the clocks recovery reads: the lease lapsed, an in-progress tool call abandoned. */
  async function elapse(conversationId: string, ms: number): Promise<void> {
    const conversations = database.db.collection("conversations");
    const conversation = await conversations.findOne({ _id: conversationId as never });
    if (conversation?.lease)
      await conversations.updateOne({ _id: conversationId as never }, { $set: { "lease.expiresAt": new Date(conversation.lease.expiresAt.getTime() - ms) } });
    const idempotency = database.db.collection("idempotency");
    for (const record of await idempotency.find({ inProgressExpiryTimestamp: { $exists: true } }).toArray())
      await idempotency.updateOne({ _id: record._id }, { $set: { inProgressExpiryTimestamp: Number(record.inProgressExpiryTimestamp) - ms } });
  }

  /**
   * The turn's event stream through the streaming URL, read to its end (cut after 10 s) as a client
   * follows it: one that ends at `approval_requested` is followed again after that event. Its last event.
   */
  async function lastStreamEvent(id: string, turnId: string): Promise<string | undefined> {
    const token = await oidc.sign("alice", { claims: { tenant: "acme" } });
    let last: { event?: string; id?: string } | undefined;
    for (let follows = 0; follows < 3; follows++) {
      const response = await fetch(new URL(`v1/conversations/${id}/turns/${turnId}/events`, streamingUrl.url), {
        headers: { accept: "text/event-stream", authorization: `Bearer ${token}`, ...(last?.id && { "last-event-id": last.id }) },
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text().catch(() => "");
      const blocks = text.split("\n\n").filter((b) => b.includes("event:"));
      const fields = (block: string) => Object.fromEntries(block.split("\n").map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]));
      last = blocks.length > 0 ? fields(blocks[blocks.length - 1]) : undefined;
      if (last?.event !== "approval_requested") break;
    }
    return last?.event;
  }

  const writes = (command: string, collection: string) => bsonString(command, collection);
  /** Where the worker dies: at the first write that matches, held at the proxy and never done. */
  const POINTS: Record<string, (chunk: Buffer) => boolean> = {
    // The tool call's in-progress record: the tool has not begun.
    "before the tool's effect": (c) => c.includes(writes("insert", "idempotency")) && c.includes(bsonString("status", "INPROGRESS")),
    // The tool call's completion record: the effect happened, its record still says in progress.
    "inside the tool, after its effect": (c) => c.includes(writes("update", "idempotency")) && c.includes(bsonString("status", "COMPLETED")),
    // The record's answer: the answer is checkpointed, nothing recorded.
    "after the final checkpoint, before the record": (c) => c.includes(writes("update", "messages")) && c.includes(bsonString("role", "assistant")),
    // The turn's completion: the record holds the answer, the turn is still running.
    "after the record's answer, before the turn's completion": (c) => c.includes(writes("update", "turns")) && c.includes(bsonString("status", "completed")),
  };

  for (const [point, match] of Object.entries(POINTS)) {
    it(`ends an approved turn killed ${point}: completed, the effect once, record and thread agreeing, its stream ended`, async () => {
      const { id, turnId, message } = await queuedTurn(`follow up: Crash ${point}`);
      expect(await runWorker(message)).toEqual({ batchItemFailures: [] });
      const turnPath = turnRequest(id, turnId);
      const approvalId = (await api(turnPath)).json.approvals[0].approvalId as string;
      const decidedAt = aws.sent.length;
      const decided = await api({
        method: "POST",
        path: `/v1/conversations/${id}/approvals/${approvalId}`,
        routeKey: "POST /v1/conversations/{id}/approvals/{approvalId}",
        claims: alice,
        body: { decision: "approve" },
      });
      expect(decided.json).toMatchObject({ decided: true, resumed: true });
      const resume = lastSent(decidedAt);

      const doomed = await container("worker");
      const held = proxy.intercept(match);
      const delivery = doomed.invoke(sqsEvent(sqsRecord(resume))).catch((error: unknown) => error);
      await Promise.race([
        held,
        delivery.then((result) => Promise.reject(new Error(`the worker finished without reaching ${point}: ${JSON.stringify(result)} ${String(result)}`))),
      ]);
      await doomed.stop();
      warm.delete("worker");
      expect(await delivery).toBeInstanceOf(FunctionError);
      const followUps = () => database.db.collection("follow_ups").countDocuments({ conversationId: id });
      expect(await followUps()).toBe(point === "before the tool's effect" ? 0 : 1);

      await elapse(id, turnsQueueVisibilityMs());
      const queuedFrom = aws.sent.length;
      // A new container: its start-up sweep, then the message SQS delivers again.
      const worker = await coldStart("worker");
      expect(await worker.invoke(sqsEvent(sqsRecord(resume, 2)))).toEqual({ batchItemFailures: [] });
      expect(await worker.invoke(TURN_RECOVERY_EVENT)).toMatchObject({ found: expect.any(Number) });
      // What the sweeps queued for this conversation, delivered as SQS would.
      for (const queued of aws.sent.slice(queuedFrom).filter((m) => m.body.includes(id))) {
        expect(await worker.invoke(sqsEvent(sqsRecord(queued)))).toEqual({ batchItemFailures: [] });
      }

      const turn = (await api(turnPath)).json;
      expect(turn).toMatchObject({ status: "completed", answer: expect.stringContaining("tool said:") });
      // Killed inside the tool, the call is not run again: the model reads that its outcome is unknown.
      if (point.startsWith("inside")) expect(turn.answer).toMatch(/interrupted while it ran; whether it took effect is unknown/);
      else expect(turn.answer).toContain("tool said: Recorded");
      expect(await followUps()).toBe(1);
      const record = await api({ method: "GET", path: `/v1/conversations/${id}/messages`, routeKey: "GET /v1/conversations/{id}/messages", claims: alice });
      const recorded = (record.json.messages as { turnId: string; role: string; content: string }[]).filter((m) => m.role === "assistant");
      expect(recorded.map((m) => [m.turnId, m.content])).toEqual([[turnId, turn.answer]]);
      const state = await api({ method: "GET", path: `/v1/conversations/${id}/state`, routeKey: "GET /v1/conversations/{id}/state", claims: alice });
      expect((state.json.messages as { role: string; content: string }[]).at(-1)).toMatchObject({ role: "assistant", content: turn.answer });
      expect(await lastStreamEvent(id, turnId)).toBe("done");
    });
  }
});
