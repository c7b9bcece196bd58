import { randomUUID } from "node:crypto";
import type { CommandStartedEvent, Document } from "mongodb";
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/index.js";
import { useTestApp } from "../support/app-fixture.js";
import { bigReport } from "../support/test-tools.js";

/**
 * Every query four turns send (two with a tool call, one offloaded) looks a document up by `_id` or
 * is served by an index whose leading keys are its conditions (for an `$or`, the outer ones and each
 * branch's), the first an equality, and not the conversation's id alone where it filters on more: a
 * query bounded by the conversation's id alone examines every document of the conversation, a
 * cost that grows with the conversation while what it returns does not (issue 28). The embedded
 * server has no `explain`, so the test checks the filters against the indexes the app creates.
 */
const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
const testApp = useTestApp("turn_queries", { clearBeforeEach: false, clientOptions: { monitorCommands: true } });
const { client, dbName } = testApp.database;
/** Fields checked on the few documents an indexed condition picked: a fence's epoch and token, an attempt, a lease holder. */
const CHECKED_ON_THE_DOCUMENT = new Set(["epoch", "token", "fence", "attempt", "leaseEpoch", "lease.holder", "prune.lease.token", "content", "base", "title"]);

/**
 * Collections a turn may read by the conversation's id alone: a thread keeps a few checkpoint
 * headers (older ones are pruned each turn), and a tenant's MCP servers are read once per cache
 * period, not per conversation.
 */
const FEW_PER_OWNER = new Set(["checkpoints", "mcp_servers"]);

let app: App;
const filters: { collection: string; command: string; filter: Document }[] = [];

function filterOf(event: CommandStartedEvent): Document[] {
  const c = event.command;
  if (event.commandName === "find" || event.commandName === "count") return [c.filter ?? c.query ?? {}];
  if (event.commandName === "findAndModify") return [c.query ?? {}];
  if (event.commandName === "update") return (c.updates ?? []).map((u: Document) => u.q ?? {});
  if (event.commandName === "delete") return (c.deletes ?? []).map((d: Document) => d.q ?? {});
  if (event.commandName === "aggregate") return [c.pipeline?.[0]?.$match ?? {}];
  return [];
}

client.on("commandStarted", (event: CommandStartedEvent) => {
  if (event.databaseName !== dbName) return;
  for (const filter of filterOf(event)) filters.push({ collection: String(event.command[event.commandName]), command: event.commandName, filter });
});
beforeAll(async () => {
  app = await testApp.appWith({ tools: [bigReport] });
  await app.ready();
});

/** A field's condition picks values rather than a range: a value, `$eq` or `$in`. */
function isEquality(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value) || value instanceof Date) return true;
  const ops = Object.keys(value as Document);
  return ops.length === 0 || !ops[0].startsWith("$") || ops.every((op) => op === "$eq" || op === "$in");
}

/** The conditions a filter needs an index for: one per `$or` branch (with the outer conditions), or the outer ones. */
function conditionSets(filter: Document): Map<string, unknown>[] {
  const fields = (d: Document) => Object.entries(d).filter(([k]) => !k.startsWith("$"));
  const branches: Document[] = filter.$or ?? [];
  return branches.length === 0 ? [new Map(fields(filter))] : branches.map((b) => new Map([...fields(filter), ...fields(b)]));
}

const OWNERS = new Set(["conversationId", "thread_id"]);

/**
 * An index serves the conditions when its leading keys are conditions, the first by equality, and
 * they are not the conversation's id alone where the filter has more conditions to bound by (then
 * the server would examine every document of the conversation to find the few it returns).
 */
function serves(keys: string[], conditions: Map<string, unknown>): boolean {
  const end = keys.findIndex((k) => !conditions.has(k));
  const prefix = end < 0 ? keys : keys.slice(0, end);
  if (prefix.length === 0 || prefix[0] === "_id" || !isEquality(conditions.get(prefix[0]))) return false;
  const bounding = [...conditions.keys()].filter((f) => !CHECKED_ON_THE_DOCUMENT.has(f));
  return !(prefix.length === 1 && OWNERS.has(prefix[0]) && bounding.length > 1);
}

describe("the queries of a turn", () => {
  it("are each served by an index on the fields they filter on", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    const questions = [
      "Hello there.",
      'Please run big_report {"rows": 60} and summarise it.',
      "How are things going?",
      'Please run big_report {"rows": 700} and summarise it.',
    ];
    filters.length = 0;
    for (const content of questions) {
      const result = await app.runner.run({ conversationId, caller: alice, content, turnId: randomUUID() });
      expect(result.status).toBe("completed");
    }
    const indexes = new Map<string, string[][]>();
    for (const name of new Set(filters.map((f) => f.collection))) {
      indexes.set(
        name,
        (await client.db(dbName).collection(name).indexes()).map((i) => Object.keys(i.key)),
      );
    }
    const unserved = new Set<string>();
    for (const { collection, command, filter } of filters) {
      if (FEW_PER_OWNER.has(collection)) continue;
      for (const conditions of conditionSets(filter)) {
        if (conditions.has("_id") && isEquality(conditions.get("_id"))) continue;
        if (!(indexes.get(collection) ?? []).some((keys) => serves(keys, conditions)))
          unserved.add(`${command} ${collection} ${JSON.stringify([...conditions.keys()])}`);
      }
    }
    expect([...unserved]).toEqual([]);
  }, 120_000);
});
