import { z } from "zod";
import { assertCanStream, lastEventId, turnBegun, turnEventStream, wantsEventStream } from "../../lib/api/event-stream.js";
import { TurnEventHub } from "../../lib/events/turn-event-hub.js";
import { TurnEventFollower } from "../../lib/events/turn-event-follower.js";
import type { HttpRequest } from "../../lib/api/http.js";
import { turnStreamEvents } from "../../lib/api/schemas.js";
import { ConflictError, NotAcceptableError, ValidationError } from "../../lib/errors.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../support/converse-endpoint.js";
import { Gate } from "../support/gate.js";
import { openEventStream, type SseEvent } from "../support/sse-client.js";

/** The tool the "wait" question calls: it holds the turn until the test opens the gate. */
let toolGate = new Gate();
/** How often the tool ran. */
let waitRuns = 0;
const waitTool: ToolDefinition = {
  name: "wait_for_test",
  description: "Waits until the test lets it finish.",
  schema: z.object({}),
  sideEffects: false,
  run: async () => {
    waitRuns++;
    await toolGate.pass();
    return "finished waiting";
  },
};

function respond(request: ConverseRequest): ScriptedReply {
  const question = lastUserText(request);
  const toolResults = request.messages.at(-1)!.content.some((b) => "toolResult" in b);
  if (question.includes("wait") && !toolResults) return { text: "Waiting now.", toolUses: [{ name: "wait_for_test", input: {} }] };
  if (question.includes("cut the text")) return { text: "Looking it up for you now.", drop: { afterFrames: 3 } };
  if (question.includes("cut the call") && !toolResults) return { toolUses: [{ name: "wait_for_test", input: {} }], drop: { afterFrames: 3 } };
  if (question.includes("break"))
    return { text: "This will not finish", streamError: { type: "modelStreamErrorException", message: "stopped", afterDeltas: 2 } };
  return { text: "The answer has five words." };
}

let converse: ConverseEndpoint;
let api: TestServer;
let token: string;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  api = await startTestServer({ MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "m" }, { app: { tools: [waitTool] } });
  token = await api.token("ada");
});

afterAll(async () => {
  await api?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

async function newConversation(): Promise<string> {
  return (await api.call("POST", "/v1/conversations", { token })).body.conversationId;
}

function ask(conversationId: string, content: string, headers: Record<string, string> = {}) {
  return openEventStream(`${api.url}/v1/conversations/${conversationId}/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "text/event-stream", ...headers },
    body: JSON.stringify({ content }),
  });
}

function follow(conversationId: string, turnId: string, lastId?: string) {
  return openEventStream(`${api.url}/v1/conversations/${conversationId}/turns/${turnId}/events`, {
    headers: { authorization: `Bearer ${token}`, ...(lastId ? { "last-event-id": lastId } : {}) },
  });
}

/** Every event's data as the OpenAPI document describes it, by its name. */
function assertDocumented(events: SseEvent[]): void {
  for (const e of events) turnStreamEvents[e.event as keyof typeof turnStreamEvents].parse(e.data);
}

const text = (events: SseEvent[]) =>
  events
    .filter((e) => e.event === "text")
    .map((e) => e.data.delta as string)
    .join("");

describe("POST /v1/conversations/{id}/messages with Accept: text/event-stream", () => {
  it("returns the turn, its progress, the answer's text deltas and done, as documented", async () => {
    const stream = await ask(await newConversation(), "Hello there");
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = await stream.rest();
    assertDocumented(events);
    expect(events.map((e) => e.event)).toEqual(["turn", "progress", "text", "text", "text", "text", "text", "done"]);
    expect(text(events)).toBe("The answer has five words.");
    expect(events.at(-1)!.data.answer).toBe("The answer has five words.");
    expect(events.slice(1).map((e) => Number(e.id))).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("returns the text before a model error mid-stream, then failed, and records the turn as failed", async () => {
    const conversationId = await newConversation();
    const events = await (await ask(conversationId, "break it")).rest();
    assertDocumented(events);
    expect(events.map((e) => e.event)).toEqual(["turn", "progress", "text", "text", "failed"]);
    expect(text(events)).toBe("This will ");
    expect(events.at(-1)!.data).toEqual({ code: "model_unreachable", message: "the turn failed: ModelStreamErrorException" });
    const turn = await api.call("GET", events[0].data.location, { token });
    expect(turn.body).toMatchObject({ status: "failed", error: { code: "model_unreachable" } });
  });

  it("fails a turn whose model connection dropped mid-answer (no stop reason) as model_unreachable, never completed", async () => {
    const conversationId = await newConversation();
    const before = converse.requests.length;
    const events = await (await ask(conversationId, "please cut the text")).rest();
    assertDocumented(events);
    expect(events.at(-1)!.event).toBe("failed");
    expect(events.at(-1)!.data.code).toBe("model_unreachable");
    expect(events.some((e) => e.event === "done")).toBe(false);
    expect(converse.requests.slice(before).some((r) => r.errorType === "dropped")).toBe(true);
    const turn = await api.call("GET", events[0].data.location, { token });
    expect(turn.body).toMatchObject({ status: "failed", error: { code: "model_unreachable" } });
    expect(turn.body.answer ?? null).toBeNull();
  });

  it("fails a turn whose model connection dropped while it was calling a tool, and runs no tool", async () => {
    const runsBefore = waitRuns;
    const conversationId = await newConversation();
    const response = await api.call("POST", `/v1/conversations/${conversationId}/messages`, { token, json: { content: "please cut the call" } });
    expect(response.status).toBe(502);
    expect(response.body.error.code).toBe("model_unreachable");
    const record = await api.call("GET", `/v1/conversations/${conversationId}/messages`, { token });
    expect(JSON.stringify(record.body)).not.toContain('"role":"assistant"');
    expect(waitRuns).toBe(runsBefore);
  });

  it("finishes and records a turn whose client went away, which GET .../events then continues after Last-Event-ID", async () => {
    toolGate = new Gate();
    const conversationId = await newConversation();
    const stream = await ask(conversationId, "wait for me");
    const seen: SseEvent[] = [];
    for (let e = await stream.next(); e && e.event !== "tool_started"; e = await stream.next()) seen.push(e);
    await toolGate.reached;
    stream.close();
    const { turnId } = seen[0].data;
    toolGate.open();
    const lastId = seen.at(-1)!.id!;
    const rest = await (await follow(conversationId, turnId, lastId)).rest();
    assertDocumented(rest);
    expect(rest.map((e) => e.event)).toEqual(["turn", "tool_started", "tool_finished", "progress", "text", "text", "text", "text", "text", "done"]);
    expect(Number(rest[1].id)).toBe(Number(lastId) + 1);
    expect(text(rest)).toBe("The answer has five words.");
    const turn = await api.call("GET", `/v1/conversations/${conversationId}/turns/${turnId}`, { token });
    expect(turn.body).toMatchObject({ status: "completed", answer: "The answer has five words." });
  });

  it("returns the same events again to a repeat with the same Idempotency-Key, without a second turn", async () => {
    const conversationId = await newConversation();
    const first = await (await ask(conversationId, "Hello again", { "idempotency-key": "k1" })).rest();
    const again = await (await ask(conversationId, "Hello again", { "idempotency-key": "k1" })).rest();
    expect(again).toEqual(first);
    expect(converse.requests.filter((r) => r.body && lastUserText(r.body) === "Hello again")).toHaveLength(1);
  });

  it("returns 422 idempotency_key_reused before any event to a repeated Idempotency-Key with another question, and runs nothing", async () => {
    const conversationId = await newConversation();
    await (await ask(conversationId, "Hello first", { "idempotency-key": "k-reused" })).rest();
    const res = await api.call("POST", `/v1/conversations/${conversationId}/messages`, {
      token,
      json: { content: "Hello second" },
      headers: { accept: "text/event-stream", "idempotency-key": "k-reused" },
    });
    expect(res).toMatchObject({ status: 422, body: { error: { code: "idempotency_key_reused" } } });
    expect(converse.requests.filter((r) => r.body && lastUserText(r.body) === "Hello second")).toHaveLength(0);
    expect((await api.call("GET", `/v1/conversations/${conversationId}/turns`, { token })).body.turns).toHaveLength(1);
  });

  it("follows the running turn to done for a repeat of its Idempotency-Key after Last-Event-ID, without a second turn", async () => {
    toolGate = new Gate();
    const conversationId = await newConversation();
    const first = await ask(conversationId, "wait for the key", { "idempotency-key": "k-running" });
    const seen: SseEvent[] = [];
    for (let e = await first.next(); e && e.event !== "tool_started"; e = await first.next()) seen.push(e);
    await toolGate.reached;
    first.close();
    const again = await ask(conversationId, "wait for the key", { "idempotency-key": "k-running", "last-event-id": seen.at(-1)!.id! });
    expect(again.status).toBe(200);
    const turn = await again.next();
    expect(turn?.data.turnId).toBe(seen[0].data.turnId);
    toolGate.open();
    const rest = await again.rest();
    expect(rest.map((e) => e.event)).toEqual(["tool_started", "tool_finished", "progress", "text", "text", "text", "text", "text", "done"]);
    expect((await api.call("GET", `/v1/conversations/${conversationId}/turns`, { token })).body.turns).toHaveLength(1);
  });

  it("returns 409 conflict with Retry-After before any event while another turn runs on the conversation, and runs nothing", async () => {
    toolGate = new Gate();
    const conversationId = await newConversation();
    const first = await ask(conversationId, "wait while I ask again");
    for (let e = await first.next(); e && e.event !== "tool_started"; e = await first.next());
    await toolGate.reached;
    const refused = await api.call("POST", `/v1/conversations/${conversationId}/messages`, {
      token,
      json: { content: "Hello while busy" },
      headers: { accept: "text/event-stream" },
    });
    expect(refused).toMatchObject({ status: 409, body: { error: { code: "conflict" } } });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    toolGate.open();
    expect((await first.rest()).at(-1)?.event).toBe("done");
    const { turns } = (await api.call("GET", `/v1/conversations/${conversationId}/turns`, { token })).body;
    expect(turns).toHaveLength(1);
    expect(converse.requests.filter((r) => r.body && lastUserText(r.body) === "Hello while busy")).toHaveLength(0);
  });

  it("sends done once the answer is stored and the conversation is free: the next question, asked at once, runs", async () => {
    const conversationId = await newConversation();
    for (const question of ["Hello one", "Hello two", "Hello three"]) {
      const stream = await ask(conversationId, question);
      let event = await stream.next();
      while (event && event.event !== "done") event = await stream.next();
      expect(event?.event).toBe("done");
      // Acted on before the stream's own end: what a client does the moment it reads done.
      const { messages } = (await api.call("GET", `/v1/conversations/${conversationId}/messages`, { token })).body;
      expect(messages.at(-1)).toMatchObject({ role: "assistant", content: "The answer has five words." });
      stream.close();
    }
    const { turns } = (await api.call("GET", `/v1/conversations/${conversationId}/turns`, { token })).body;
    expect(turns.map((t: { status: string }) => t.status)).toEqual(["completed", "completed", "completed"]);
  });

  it("returns 400 and runs no turn for a Last-Event-ID that is not an id", async () => {
    const conversationId = await newConversation();
    const res = await api.call("POST", `/v1/conversations/${conversationId}/messages`, {
      token,
      json: { content: "never asked" },
      headers: { accept: "text/event-stream", "last-event-id": "x1" },
    });
    expect(res).toMatchObject({ status: 400, body: { error: { code: "invalid_request" } } });
    expect((await api.call("GET", `/v1/conversations/${conversationId}/turns`, { token })).body.turns).toEqual([]);
  });
});

describe("GET /v1/conversations/{id}/turns/{turnId}/events", () => {
  it("returns a finished turn's events after Last-Event-ID, from the store", async () => {
    const conversationId = await newConversation();
    const all = await (await ask(conversationId, "Hello there")).rest();
    const after = await (await follow(conversationId, all[0].data.turnId, "3")).rest();
    expect(after.slice(1)).toEqual(all.slice(4));
  });

  it("returns nothing after a Last-Event-ID past a finished turn's last event, not an invented done (issue 31)", async () => {
    const conversationId = await newConversation();
    const all = await (await ask(conversationId, "Hello there")).rest();
    const lastId = Number(all[all.length - 1].id);
    const past = await (await follow(conversationId, all[0].data.turnId, String(lastId + 1000))).rest();
    expect(past.map((e) => e.event)).toEqual(["turn"]);
  });

  it("returns 404 for another caller's turn", async () => {
    const conversationId = await newConversation();
    const all = await (await ask(conversationId, "Hello there")).rest();
    const other = await api.token("bob");
    const res = await api.call("GET", `/v1/conversations/${conversationId}/turns/${all[0].data.turnId}/events`, { token: other });
    expect(res.status).toBe(404);
  });
});

describe("event-stream", () => {
  const request = (headers: Record<string, string>, canStream = true): HttpRequest => ({ method: "POST", path: "/", headers, query: {}, canStream });

  describe("wantsEventStream", () => {
    it("returns true for text/event-stream among other media ranges, with any weight above 0", () => {
      expect(wantsEventStream(request({ accept: "application/json;q=0.5, Text/Event-Stream" }))).toBe(true);
      expect(wantsEventStream(request({ accept: "text/event-stream;q=0.1" }))).toBe(true);
      expect(wantsEventStream(request({ accept: "text/event-stream; charset=utf-8; q=1.0" }))).toBe(true);
    });

    it("returns false for a JSON client, and for text/event-stream weighted 0 or with a malformed weight", () => {
      expect(wantsEventStream(request({ accept: "application/json" }))).toBe(false);
      expect(wantsEventStream(request({ accept: "text/event-stream;q=0, application/json" }))).toBe(false);
      expect(wantsEventStream(request({ accept: "text/event-stream; Q=0.000" }))).toBe(false);
      expect(wantsEventStream(request({ accept: "text/event-stream;q=abc" }))).toBe(false);
    });

    it("throws NotAcceptableError where the adapter cannot stream", () => {
      expect(() => wantsEventStream(request({ accept: "text/event-stream" }, false))).toThrow(NotAcceptableError);
      expect(() => assertCanStream(request({}, false))).toThrow(NotAcceptableError);
    });

    it("throws naming the streaming URL the deployment gave", () => {
      const url = "https://abc.lambda-url.eu-west-1.on.aws/";
      expect(() => wantsEventStream(request({ accept: "text/event-stream" }, false), url)).toThrow(`use the streaming URL ${url},`);
    });
  });

  describe("turnEventStream", () => {
    const follower = () => {
      const { database, events } = api.server.app;
      return new TurnEventFollower({ store: database.turnEvents, turns: database.turns, hub: events.hub });
    };
    const options = { turnId: "t", conversationId: "c", afterId: 0 };

    it("returns settled only once the turn it started has ended, whether it answered or threw", async () => {
      let finish!: () => void;
      const running = new Promise<void>((resolve) => (finish = resolve));
      const response = turnEventStream({ ...options, events: follower(), running });
      let settled = false;
      void response.settled?.then(() => (settled = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(settled).toBe(false);
      finish();
      await response.settled;
      expect(settled).toBe(true);
      await expect(turnEventStream({ ...options, events: follower(), running: Promise.reject(new Error("model away")) }).settled).resolves.toBe(undefined);
    });

    it("returns no settled work for a stream that only follows a turn (GET .../events)", () => {
      expect(turnEventStream({ ...options, events: follower() }).settled).toBeUndefined();
    });
  });

  describe("turnBegun", () => {
    const progressEvent = { type: "progress", step: "model", modelCall: 0, id: 1 } as const;
    const pending = () => new Promise<never>(() => undefined);

    it("returns at the turn's first event in the hub while its run goes on", async () => {
      const hub = new TurnEventHub();
      const begun = turnBegun(hub, "t1", pending());
      hub.publish("t1", progressEvent);
      await expect(begun).resolves.toBeUndefined();
    });

    it("returns at once for a turn the hub already has events of", async () => {
      const hub = new TurnEventHub();
      hub.publish("t1", progressEvent);
      await expect(turnBegun(hub, "t1", pending())).resolves.toBeUndefined();
    });

    it("returns when the run settles before any event (a turn handed to the worker)", async () => {
      await expect(turnBegun(new TurnEventHub(), "t1", Promise.resolve({ kind: "queued" }))).resolves.toBeUndefined();
    });

    it("throws the run's error when it was refused before its first event", async () => {
      const refused = new ConflictError("a turn is already running on this conversation", 5);
      await expect(turnBegun(new TurnEventHub(), "t1", Promise.reject(refused))).rejects.toBe(refused);
    });
  });

  describe("lastEventId", () => {
    it("returns 0 without the header and the id with it", () => {
      expect(lastEventId(request({}))).toBe(0);
      expect(lastEventId(request({ "last-event-id": " 42 " }))).toBe(42);
    });

    it("throws ValidationError for an id that is not digits or too long", () => {
      for (const id of ["-1", "1e3", "1234567890"]) expect(() => lastEventId(request({ "last-event-id": id }))).toThrow(ValidationError);
    });
  });
});
