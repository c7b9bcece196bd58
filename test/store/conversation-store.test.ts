import { describe, expect, it } from "vitest";
import { apiPrincipal, slackPrincipal, tenantOwner, type Principal } from "../../lib/auth/principal.js";
import { NotFoundError, ValidationError } from "../../lib/errors.js";
import { ConversationStore, legacyOwner, MAX_METADATA_KEYS } from "../../lib/store/conversation-store.js";
import { useTestDatabase } from "../support/store-fixture.js";

// Each test makes its store: some check what setup() does to documents already there.
const database = useTestDatabase("conversations_store");

/** A caller of no roles: the check reads the principal only. */
const as = (principal: Principal) => ({ principal, roles: [] });

describe("ConversationStore", () => {
  describe("getFor", () => {
    it("returns a conversation only to its owner: issuer, tenant and subject all equal", async () => {
      const store = new ConversationStore(database.db);
      const mine = await store.create(apiPrincipal("alice", "acme"));
      await expect(store.getFor(mine._id, as(apiPrincipal("alice", "acme")), "read")).resolves.toMatchObject({ _id: mine._id });
      for (const other of [apiPrincipal("alice"), apiPrincipal("alice", "globex"), slackPrincipal("acme", "alice")]) {
        await expect(store.getFor(mine._id, as(other), "read")).rejects.toBeInstanceOf(NotFoundError);
      }
    });

    it("returns a workspace's conversation to its users and throws NotFoundError to an API principal", async () => {
      const store = new ConversationStore(database.db);
      const thread = await store.findOrCreateByChannelKey(tenantOwner("slack", "T0"), { channel: "slack", key: "slack:T0:C0:1.1" }, new Date());
      await expect(store.getFor(thread._id, as(slackPrincipal("T0", "U1")), "read")).resolves.toMatchObject({ _id: thread._id });
      await expect(store.getFor(thread._id, as(apiPrincipal("slack:T0", "slack:T0")), "read")).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe("mergeMetadata", () => {
    const alice = apiPrincipal("alice", "acme");
    const keys = (prefix: string, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));

    it("throws ValidationError and writes nothing when the merge would leave more than 32 keys", async () => {
      const store = new ConversationStore(database.db);
      const thread = await store.create(alice, undefined, undefined, { metadata: keys("a", 30) });
      await expect(store.mergeMetadata(thread._id, alice, keys("b", 3))).rejects.toBeInstanceOf(ValidationError);
      expect((await store.get(thread._id))?.metadata).toEqual(keys("a", 30));
      // Keys already there count once: overwriting them at the cap is allowed.
      await store.mergeMetadata(thread._id, alice, keys("b", 2));
      await expect(store.mergeMetadata(thread._id, alice, { a0: "new", b1: null })).resolves.toMatchObject({ metadata: { a0: "new", b1: null } });
      expect(Object.keys((await store.get(thread._id))?.metadata ?? {})).toHaveLength(MAX_METADATA_KEYS);
    });

    it("holds the cap under 40 concurrent merges of one new key each", async () => {
      const store = new ConversationStore(database.db);
      const thread = await store.create(alice);
      const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => store.mergeMetadata(thread._id, alice, { [`k${i}`]: i })));
      expect(Object.keys((await store.get(thread._id))?.metadata ?? {}).length).toBeLessThanOrEqual(MAX_METADATA_KEYS);
      expect(results.filter((r) => r.status === "fulfilled").length).toBeLessThanOrEqual(MAX_METADATA_KEYS);
    });
  });

  describe("create", () => {
    it("throws ValidationError for metadata of more than 32 keys, and stores nothing", async () => {
      const store = new ConversationStore(database.db);
      const id = crypto.randomUUID();
      const metadata = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i]));
      await expect(store.create(apiPrincipal("alice", "acme"), undefined, undefined, { id, metadata })).rejects.toBeInstanceOf(ValidationError);
      expect(await store.get(id)).toBeNull();
    });
  });

  describe("findOrCreateByChannelKey after the thread's conversation was deleted", () => {
    const owner = tenantOwner("slack", "T0");
    const channel = { channel: "slack", key: "slack:T0:C0:deleted.1" } as const;

    it("throws NotFoundError for a message received before the deletion, and creates nothing", async () => {
      const store = new ConversationStore(database.db);
      const received = new Date();
      const first = await store.findOrCreateByChannelKey(owner, channel, received);
      await store.delete(first._id, new Date(received.getTime() + 1000));
      await expect(store.findOrCreateByChannelKey(owner, channel, received)).rejects.toBeInstanceOf(NotFoundError);
      expect(await store.collection.countDocuments({ "channel.key": channel.key })).toBe(0);
    });

    it("throws NotFoundError for a message received before the deletion even once a later message bound a new conversation", async () => {
      const store = new ConversationStore(database.db);
      const received = new Date();
      const deletedAt = new Date(received.getTime() + 1000);
      await store.delete((await store.findOrCreateByChannelKey(owner, channel, received))._id, deletedAt);
      const fresh = await store.findOrCreateByChannelKey(owner, channel, new Date(deletedAt.getTime() + 1000));
      await expect(store.findOrCreateByChannelKey(owner, channel, received)).rejects.toBeInstanceOf(NotFoundError);
      await expect(store.findOrCreateByChannelKey(owner, channel, new Date(deletedAt.getTime() + 2000))).resolves.toMatchObject({ _id: fresh._id });
    });
  });

  describe("legacyOwner", () => {
    it("returns a Teams user for a tenant-less Teams conversation, and undefined for fields that do not fit", () => {
      expect(legacyOwner({ ownerId: "teams:29:u", tenantId: null, channel: { channel: "teams" } })).toEqual({ issuer: "teams", tenant: null, subject: "29:u" });
      expect(legacyOwner({ ownerId: "teams:t1", tenantId: "teams:t1", channel: { channel: "teams" } })).toEqual({
        issuer: "teams",
        tenant: "t1",
        subject: null,
      });
      expect(legacyOwner({ ownerId: "slack:", tenantId: "slack:", channel: { channel: "slack" } })).toBeUndefined();
      expect(legacyOwner({ ownerId: 3, tenantId: null, channel: { channel: "api" } })).toBeUndefined();
    });
  });
});
