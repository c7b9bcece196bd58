import { randomUUID } from "node:crypto";
import { z } from "zod";
import { createApp, type App } from "../../lib/app.js";
import { loadConfig } from "../../lib/config/config.js";
import type { TurnEvent } from "../../lib/events/turn-event-types.js";
import { TurnEventFollower } from "../../lib/events/turn-event-follower.js";
import { TurnEventHub } from "../../lib/events/turn-event-hub.js";
import { silentLogger } from "../../lib/logger.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../support/converse-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";

const caller: Caller = { principal: apiPrincipal("ada", "acme"), roles: [] };

const lookUp: ToolDefinition = {
  name: "look_up",
  description: "Looks a word up.",
  schema: z.object({ word: z.string() }),
  sideEffects: false,
  run: async ({ word }: { word: string }) => `${word}: a word`,
};

/** "look" asks for the tool first; "long" answers with many words; "break" fails after two deltas. */
function respond(request: ConverseRequest): ScriptedReply {
  const question = lastUserText(request);
  const toolResults = request.messages.at(-1)!.content.some((b) => "toolResult" in b);
  if (question.includes("look") && !toolResults) return { text: "Let me check.", toolUses: [{ name: "look_up", input: { word: "tern" } }] };
  if (question.includes("break"))
    return { text: "This will not finish", streamError: { type: "modelStreamErrorException", message: "stopped", afterDeltas: 2 } };
  const words = question.includes("long") ? 400 : 4;
  return { text: Array.from({ length: words }, (_, i) => `word${i}`).join(" ") };
}

let converse: ConverseEndpoint;
const database = useTestDatabase("events", { clearBeforeEach: false });
let app: App;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "m" });
  app = await createApp(config, { mongoClient: database.client, tools: [lookUp], logger: silentLogger });
});

afterAll(async () => {
  await app?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

async function runTurn(content: string): Promise<{ turnId: string; error?: unknown }> {
  const { _id: conversationId } = await app.database.conversations.create(caller.principal);
  const turnId = randomUUID();
  const error = await app.runner.run({ conversationId, caller, content, turnId }).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { turnId, error };
}

/** Follows turns as the API does, over the app's hub. */
const follower = () => new TurnEventFollower({ store: app.database.turnEvents, turns: app.database.turns, hub: app.events.hub });

async function collect(events: AsyncIterable<TurnEvent>): Promise<TurnEvent[]> {
  const seen: TurnEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

const summary = (events: TurnEvent[]) => events.map((e) => (e.type === "text" ? `text:${e.delta}` : e.type));

describe("TurnEventFollower", () => {
  describe("follow", () => {
    it("returns progress, the tool's start and finish, the text of each model call and done, in order", async () => {
      const { turnId } = await runTurn("look it up");
      const events = await collect(follower().follow(turnId, 0, AbortSignal.timeout(10_000)));
      expect(summary(events)).toEqual([
        "progress",
        "text:Let ",
        "text:me ",
        "text:check.",
        "tool_started",
        "tool_finished",
        "progress",
        "text:word0 ",
        "text:word1 ",
        "text:word2 ",
        "text:word3",
        "done",
      ]);
      expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
      expect(events.find((e) => e.type === "tool_finished")).toMatchObject({ tool: "look_up", status: "success" });
      expect(events.at(-1)).toMatchObject({ type: "done", answer: "word0 word1 word2 word3" });
    });

    it("returns the stored events after an id to a process that did not run the turn", async () => {
      const { turnId } = await runTurn("look it up");
      const elsewhere = new TurnEventFollower({ store: app.database.turnEvents, turns: app.database.turns, hub: new TurnEventHub() });
      const all = await collect(follower().follow(turnId, 0, AbortSignal.timeout(10_000)));
      expect(await collect(elsewhere.follow(turnId, 3, AbortSignal.timeout(10_000)))).toEqual(all.slice(3));
    });

    it("returns the text before a model error mid-stream, then failed", async () => {
      const { turnId, error } = await runTurn("break please");
      expect(error).toMatchObject({ name: "ModelCallFailedError", code: "model_unreachable", cause: { name: "ModelStreamErrorException" } });
      const events = await collect(follower().follow(turnId, 0, AbortSignal.timeout(10_000)));
      expect(summary(events)).toEqual(["progress", "text:This ", "text:will ", "failed"]);
      expect(events.at(-1)).toMatchObject({ code: "model_unreachable" });
    });
  });

  describe("record", () => {
    it("writes as many batches for a 400-word answer as for a 4-word one", async () => {
      const short = await runTurn("short");
      const long = await runTurn("long");
      const batches = database.db.collection(COLLECTIONS.turnEvents);
      const count = async (turnId: string) => batches.countDocuments({ turnId });
      const longEvents = await collect(follower().follow(long.turnId, 0, AbortSignal.timeout(10_000)));
      expect(longEvents.filter((e) => e.type === "text")).toHaveLength(400);
      expect(await count(long.turnId)).toBe(await count(short.turnId));
      expect(await count(short.turnId)).toBe(2);
    });
  });
});
