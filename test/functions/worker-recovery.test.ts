import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TURN_RECOVERY_EVENT } from "../../lib/agent/turn-recovery-event.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { KEY_MAINTENANCE_EVENT } from "../../lib/lifecycle/key-maintenance-event.js";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { startHarness, type Harness } from "./support/harness.js";
import { KMS } from "@aws-sdk/client-kms";
import { type ContentKeyDocument, KmsTenantKeys } from "../../lib/crypto/kms-tenant-keys.js";
import { CONTENT_KEYS_COLLECTION } from "../../lib/crypto/tenant-keys.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("worker handler on the recovery schedule's event", () => {
  it("finishes a turn left running under a lapsed lease, as interrupted when it recorded no job, and closes its stream", async () => {
    // With the tenants' keys the functions use (the harness's KMS stand-in): the turn's events are sealed.
    const kms = new KMS({ endpoint: h.kms.url, region: "us-east-1", credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" } });
    const contentKeys = new KmsTenantKeys(kms, h.database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION));
    const database = new ThreadwiseDatabase(h.database.client, { dbName: h.database.dbName, contentKeys });
    const { _id: conversationId } = await database.conversations.create(apiPrincipal("alice"));
    const fence = await database.lease.acquire(conversationId, "dead-attempt");
    const turnId = randomUUID();
    await database.turns.claim(turnId, fence);
    // The attempt died: its lease lapsed unrenewed.
    await database.conversations.collection.updateOne({ _id: conversationId }, { $set: { "lease.expiresAt": new Date(Date.now() - 1000) } });

    const result = await h.worker(TURN_RECOVERY_EVENT as never);

    expect(result).toMatchObject({ found: 1, failed: 1 });
    expect(await database.turns.get(turnId)).toMatchObject({ status: "failed", error: { code: "interrupted" } });
    expect((await database.turnEvents.after(turnId, 0)).at(-1)).toMatchObject({ type: "failed", code: "interrupted" });
  });
});

describe("worker handler on the key schedule's event", () => {
  it("runs key maintenance and answers what it did: nothing, where contents are stored clear", async () => {
    expect(await h.worker(KEY_MAINTENANCE_EVENT as never)).toEqual({ rotated: 0, reencrypted: 0, runs: 0 });
  });
});
