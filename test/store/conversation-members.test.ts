import { apiPrincipal } from "../../lib/auth/principal.js";
import { ConflictError, NotFoundError } from "../../lib/errors.js";
import { ConversationMembers, MAX_MEMBERS } from "../../lib/store/conversation-members.js";
import { ConversationStore } from "../../lib/store/conversation-store.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("conversation_members");
const alice = apiPrincipal("alice", "acme");
const subjects = (list: { subject: string }[]) => list.map((m) => m.subject);

describe("ConversationMembers", () => {
  describe("addMember", () => {
    it("returns the lists before and after, and changes nothing for a member already there", async () => {
      const store = new ConversationStore(database.db);
      const members = new ConversationMembers(store);
      const { _id } = await store.create(alice);
      const added = await members.addMember(_id, apiPrincipal("bob", "acme"), alice);
      expect([subjects(added.before), subjects(added.after), added.changed]).toEqual([[], ["bob"], true]);
      const again = await members.addMember(_id, apiPrincipal("bob", "acme"), alice);
      expect([subjects(again.before), subjects(again.after), again.changed]).toEqual([["bob"], ["bob"], false]);
      expect((await store.get(_id))?.members?.[0]).toMatchObject({ issuer: "api", tenant: "acme", subject: "bob", addedBy: alice });
    });

    it("keeps every one of five concurrent adds: a change applies only to the list it read", async () => {
      const store = new ConversationStore(database.db);
      const members = new ConversationMembers(store);
      const { _id } = await store.create(alice);
      const names = ["m1", "m2", "m3", "m4", "m5"];
      await Promise.all(names.map((n) => members.addMember(_id, apiPrincipal(n, "acme"), alice)));
      expect(subjects((await store.get(_id))?.members ?? []).sort()).toEqual(names);
    });

    it(`throws ConflictError at ${MAX_MEMBERS} members and writes nothing`, async () => {
      const store = new ConversationStore(database.db);
      const members = new ConversationMembers(store);
      const { _id } = await store.create(alice);
      const full = Array.from({ length: MAX_MEMBERS }, (_, i) => ({ ...apiPrincipal(`u${i}`, "acme"), addedAt: new Date(), addedBy: alice }));
      await store.collection.updateOne({ _id }, { $set: { members: full } });
      await expect(members.addMember(_id, apiPrincipal("one-more", "acme"), alice)).rejects.toBeInstanceOf(ConflictError);
      expect((await store.get(_id))?.members).toHaveLength(MAX_MEMBERS);
    });

    it("throws NotFoundError for a conversation that is not there", async () => {
      const members = new ConversationMembers(new ConversationStore(database.db));
      await expect(members.addMember("missing", apiPrincipal("bob", "acme"), alice)).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe("removeMember", () => {
    it("removes one member and keeps the others; throws NotFoundError for one who is not a member", async () => {
      const store = new ConversationStore(database.db);
      const members = new ConversationMembers(store);
      const { _id } = await store.create(alice);
      for (const n of ["bob", "carol"]) await members.addMember(_id, apiPrincipal(n, "acme"), alice);
      const removed = await members.removeMember(_id, apiPrincipal("bob", "acme"));
      expect([subjects(removed.before), subjects(removed.after)]).toEqual([["bob", "carol"], ["carol"]]);
      await expect(members.removeMember(_id, apiPrincipal("bob", "acme"))).rejects.toBeInstanceOf(NotFoundError);
      await expect(members.removeMember(_id, apiPrincipal("carol", "globex"))).rejects.toBeInstanceOf(NotFoundError);
      expect(subjects((await store.get(_id))?.members ?? [])).toEqual(["carol"]);
    });
  });
});
