import type { Principal } from "../auth/principal.js";
import { ConflictError, NotFoundError } from "../errors.js";
import { memberIs, METADATA_MERGE_ATTEMPTS, type ConversationDocument, type ConversationMember, type ConversationStore } from "./conversation-store.js";

/** Most members an API conversation has besides its owner (docs/api.md, "Members"). */
export const MAX_MEMBERS = 100;

/** A change of a conversation's members: the lists before and after, as the audit log records them. */
export interface MembersChange {
  conversation: ConversationDocument;
  before: ConversationMember[];
  after: ConversationMember[];
  changed: boolean;
}

const samePrincipal = (a: Principal, b: Principal) => a.issuer === b.issuer && a.tenant === b.tenant && a.subject === b.subject;

/**
 * The members of API conversations (docs/api.md, "Members"), kept on the conversation document
 * beside its owner, where the one check (`lib/auth/conversation-access.ts`) reads them. Apart from
 * {@link ConversationStore} so that what only the API and erasure change stays out of the channel
 * webhooks' bundle.
 */
export class ConversationMembers {
  constructor(private readonly conversations: ConversationStore) {}

  /**
   * Adds a member (the caller checked who may, and that the member may be one: `assertMayBeMember`).
   * A member already there is left as it was (`changed: false`); a conversation at
   * {@link MAX_MEMBERS} is a `ConflictError` and nothing is written; one deleted meanwhile NotFound.
   */
  async addMember(conversationId: string, member: Principal, addedBy: Principal, now = new Date()): Promise<MembersChange> {
    return this.#change(conversationId, (members) => {
      if (members.some((m) => samePrincipal(m, member))) return undefined;
      if (members.length >= MAX_MEMBERS) {
        throw new ConflictError(`conversation ${conversationId} has ${MAX_MEMBERS} members, the most it may have; remove one first`);
      }
      return [...members, { ...memberIs(member), addedAt: now, addedBy: memberIs(addedBy) }];
    });
  }

  /** Removes a member; NotFoundError when the conversation has no such member (nothing changed). */
  async removeMember(conversationId: string, member: Principal): Promise<MembersChange> {
    return this.#change(conversationId, (members) => {
      if (!members.some((m) => samePrincipal(m, member))) throw new NotFoundError(`member ${member.subject} of conversation ${conversationId} not found`);
      return members.filter((m) => !samePrincipal(m, member));
    });
  }

  /**
   * Writes `change(members)` over the list it read, only while the list is still the one read (its
   * `membersVersion`), so concurrent changes cannot lose one another: one that lost the race reads
   * again, and after {@link METADATA_MERGE_ATTEMPTS} tries is a `ConflictError`. `change` returns
   * undefined for no change.
   */
  async #change(conversationId: string, change: (members: ConversationMember[]) => ConversationMember[] | undefined): Promise<MembersChange> {
    for (let attempt = 0; attempt < METADATA_MERGE_ATTEMPTS; attempt++) {
      const current = await this.conversations.get(conversationId);
      if (!current) throw new NotFoundError(`conversation ${conversationId} not found`);
      const before = current.members ?? [];
      const after = change(before);
      if (after === undefined) return { conversation: current, before, after: before, changed: false };
      const version = current.membersVersion ?? 0;
      const unchanged = current.membersVersion === undefined ? { membersVersion: { $exists: false } } : { membersVersion: version };
      const doc = await this.conversations.collection.findOneAndUpdate(
        { _id: conversationId, ...unchanged },
        { $set: { members: after, membersVersion: version + 1 } },
        { returnDocument: "after" },
      );
      if (doc) return { conversation: doc, before, after, changed: true };
    }
    throw new ConflictError(`the members of conversation ${conversationId} kept changing while this change was written; try again`, 1);
  }
}
