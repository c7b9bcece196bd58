import type { Collection } from "mongodb";
import type { ContentCipher } from "../../crypto/content-cipher.js";
import { COLLECTIONS } from "../collections.js";
import type { ResealPass, ResealWalker } from "../content-resealer.js";
import type { CheckpointReseal, NeedsReseal } from "./checkpoint-resealer.js";

/** What the walker needs of the checkpointer: its reseal walk over one thread. */
export interface ResealableCheckpoints {
  resealStoredCheckpoints(needsReseal: NeedsReseal, options: { threadId?: string }): Promise<CheckpointReseal>;
}

/**
 * Re-encryption of the checkpointer's values after a rotation (docs/security.md, "Rotation"): the
 * tenant's threads, one conversation at a time in `_id` order (a thread is its conversation), each
 * walked by `ThreadwiseSaver.resealStoredCheckpoints` with the values another key than the pass's
 * sealed (told from each value's message header, nothing decrypted to choose).
 * The cursor is the last conversation done, so a run cut short resumes with the thread after it;
 * the saver replaces a document only if it is unchanged since read, so a turn writing meanwhile wins.
 */
export class CheckpointResealWalker implements ResealWalker {
  readonly name = "checkpoints";

  constructor(
    private readonly conversations: Collection<{ _id: string; owner?: { issuer: string; tenant: string | null } }>,
    private readonly checkpoints: ResealableCheckpoints,
    private readonly cipher: Pick<ContentCipher, "sealedUnderOtherKey">,
  ) {}

  async reseal(pass: ResealPass): Promise<boolean> {
    const stale: NeedsReseal = (stored) => this.cipher.sealedUnderOtherKey(stored, pass.keyId);
    // The tenant's conversations only (their owner, as `ownedByTenant` asks it), in `_id` order from the cursor.
    const owner = { "owner.issuer": pass.tenant.issuer, "owner.tenant": pass.tenant.tenant };
    let lastId = pass.after?.walker === this.name ? (pass.after.lastId as string) : undefined;
    for (;;) {
      const page = await this.conversations
        .find(lastId === undefined ? owner : { ...owner, _id: { $gt: lastId } }, { projection: { _id: 1 } })
        .sort({ _id: 1 })
        .limit(pass.batchSize)
        .toArray();
      if (page.length === 0) return true;
      let resealed = 0;
      let raced = 0;
      for (const { _id } of page) {
        const done = await this.checkpoints.resealStoredCheckpoints(stale, { threadId: _id });
        resealed += done.resealed;
        raced += done.changed;
      }
      lastId = page[page.length - 1]._id;
      const batch = { walker: this.name, collection: COLLECTIONS.checkpoints, lastId, examined: page.length, resealed, raced };
      if (!(await pass.onBatch(batch))) return false;
    }
  }
}
