import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, slackPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { ValidationError } from "../../lib/errors.js";
import { silentLogger } from "../../lib/logger.js";
import { InProcessTurnQueue } from "../../lib/queue/in-process-turn-queue.js";
import { apiTurnJob, TurnDispatcher } from "../../lib/queue/turn-dispatcher.js";
import type { TurnMetrics } from "../../lib/queue/turn-metrics.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("dispatcher", { clearBeforeEach: false });
const caller: Caller = { principal: apiPrincipal("ada", "acme"), roles: ["analyst"] };
let app: App;

beforeAll(async () => {
  // The offline model answers at once: no endpoint needed for turns that run in the request.
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, MODEL_PROVIDER: "local" });
  app = await createApp(config, { mongoClient: database.client, tools: [], logger: silentLogger });
});
afterAll(() => app?.close());

/** A dispatcher over the app's runner whose queue keeps the jobs it is handed, without running them. */
function dispatcher(fields: { onTurnCompleted?: (m: TurnMetrics) => void; onTurnFailed?: (e: unknown) => void } = {}) {
  const queued: TurnJob[] = [];
  const queue = new InProcessTurnQueue(async (job) => void queued.push(job));
  return { queued, queue, dispatch: new TurnDispatcher({ runner: app.runner, turns: app.database.turns, queue, ...fields }) };
}

async function conversation(): Promise<string> {
  return (await app.database.conversations.create(caller.principal))._id;
}

describe("TurnDispatcher", () => {
  describe("dispatch", () => {
    it("returns the turn completed in the request, and reports its metrics", async () => {
      const metrics: TurnMetrics[] = [];
      const { dispatch, queued } = dispatcher({ onTurnCompleted: (m) => metrics.push(m) });
      const turnId = randomUUID();
      const outcome = await dispatch.dispatch({ conversationId: await conversation(), caller, content: "Hello?", turnId });
      expect(outcome).toMatchObject({ kind: "completed", result: { turnId, status: "completed" } });
      expect(metrics).toHaveLength(1);
      expect(queued).toEqual([]);
    });

    it("returns queued at once for an async turn, the turn recorded as queued and its job handed to the queue", async () => {
      const { dispatch, queue, queued } = dispatcher();
      const conversationId = await conversation();
      const turnId = randomUUID();
      expect(await dispatch.dispatch({ conversationId, caller, content: "Later?", turnId }, { async: true })).toEqual({ kind: "queued", turnId });
      expect((await app.database.turns.get(turnId))?.status).toBe("queued");
      await queue.drain();
      expect(queued.map((j) => [j.channel, j.conversationKey, j.dedupeId, j.content])).toEqual([["api", conversationId, turnId, "Later?"]]);
    });

    it("throws a turn's own failure, tells onTurnFailed, and queues nothing", async () => {
      const failures: unknown[] = [];
      const { dispatch, queued } = dispatcher({ onTurnFailed: (e) => failures.push(e) });
      const run = dispatch.dispatch({ conversationId: randomUUID(), caller, content: "Anyone?", turnId: randomUUID() });
      await expect(run).rejects.toMatchObject({ name: "NotFoundError" });
      expect(failures).toHaveLength(1);
      expect(queued).toEqual([]);
    });
  });
});

describe("apiTurnJob", () => {
  it("returns the API turn as a job: the conversation its key, the turn its dedupe id, the caller's roles and read scope", () => {
    const job = apiTurnJob({ conversationId: "c1", caller, content: "Hi", turnId: "t1" });
    expect(job).toMatchObject({ channel: "api", conversationKey: "c1", dedupeId: "t1", content: "Hi", roles: ["analyst"], principal: caller.principal });
    expect(job.readScope).toMatch(/^user:/);
  });

  it("throws ValidationError for a channel caller", () => {
    const slack: Caller = { principal: slackPrincipal("T1", "U1"), roles: [] };
    expect(() => apiTurnJob({ conversationId: "c1", caller: slack, content: "Hi", turnId: "t1" })).toThrow(ValidationError);
  });
});
