import { WriteFence } from "../../lib/store/write-fence.js";

/** Far enough that nothing written in a test expires during it. */
const TEST_EXPIRY = new Date("2100-01-01T00:00:00Z");

/** A fence that always holds: for tests of one store's writes, where no turn competes. */
export function heldFence(conversationId: string, epoch = 1): WriteFence {
  return new WriteFence(conversationId, epoch, "test", TEST_EXPIRY, async () => true);
}

/** A fence already lost (taken over or deleted): every guarded write is taken back. */
export function lostFence(conversationId: string, epoch = 1): WriteFence {
  return new WriteFence(conversationId, epoch, "test", TEST_EXPIRY, async () => false);
}
