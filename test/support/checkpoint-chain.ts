import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph-checkpoint";

/**
 * Checks that a thread's kept checkpoints form one chain: newest first, each one's parent lies
 * between the next older kept checkpoint (inclusive) and itself, so pruned checkpoints may sit in
 * between but no checkpoint starts from further back (a fork). Ids are time-ordered UUIDv6.
 * Returns the first break found, or undefined.
 */
export async function chainBreak(saver: BaseCheckpointSaver, threadId: string): Promise<string | undefined> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) tuples.push(tuple);
  for (let i = 0; i + 1 < tuples.length; i++) {
    const id = tuples[i].config.configurable?.checkpoint_id as string;
    const older = tuples[i + 1].config.configurable?.checkpoint_id as string;
    const parent = tuples[i].parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parent === undefined || parent < older || parent >= id) return `checkpoint ${id} starts from ${parent ?? "nothing"}, before ${older}`;
  }
  return undefined;
}
