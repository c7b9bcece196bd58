import type { RunnableConfig } from "@langchain/core/runnables";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import fc from "fast-check";
import { DocumentTooLargeError } from "../../lib/errors.js";
import type { ThreadwiseSaver } from "../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { countThreadDocuments, loopMetadata, newSaver } from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("size", { clearBeforeEach: false });

/** Characters by the bytes one of them takes once serialized: ASCII, two-byte UTF-8, a control character JSON escapes to six. */
const CHARACTERS = [
  { char: "a", bytes: 1 },
  { char: "é", bytes: 2 },
  { char: "\u0001", bytes: 6 },
] as const;

type Kind = "human" | "ai" | "tool";

function message(kind: Kind, content: string, n: number): BaseMessage {
  if (kind === "human") return new HumanMessage({ content, id: `m${n}` });
  if (kind === "ai") return new AIMessage({ content, id: `m${n}` });
  return new ToolMessage({ content, tool_call_id: `call${n}`, id: `m${n}` });
}

/** Appends each step's messages to the thread's message list, one checkpoint per step, as a graph run does. */
async function writeSteps(saver: ThreadwiseSaver, threadId: string, steps: BaseMessage[][]): Promise<BaseMessage[]> {
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  let messages: BaseMessage[] = [];
  let version: number | undefined;
  for (const step of steps) {
    messages = [...messages, ...step];
    version = saver.getNextVersion(version);
    const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { messages }, channel_versions: { messages: version } };
    config = await saver.put(config, checkpoint, loopMetadata, { messages: version });
  }
  return messages;
}

describe("ThreadwiseSaver", () => {
  describe("put", () => {
    it("keeps a thread writable when every message is 600 KB, at the default document limit", async () => {
      const { saver } = await newSaver(test);
      const steps = Array.from({ length: 8 }, (_, n) => [message(n % 2 === 0 ? "tool" : "ai", "x".repeat(600_000), n)]);
      const written = await writeSteps(saver, "t", steps);
      const read = (await saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.channel_values.messages as BaseMessage[];
      expect(read.map((m) => m.id)).toEqual(written.map((m) => m.id));
      expect(read.every((m) => m.content === "x".repeat(600_000))).toBe(true);
    });

    it("keeps a thread writable for any sequence of messages that each fit a document", async () => {
      const maxDocumentBytes = 64 * 1024;
      // Room for the message's own fields and the link document's.
      const maxContentBytes = maxDocumentBytes - 4 * 1024;
      const { saver } = await newSaver(test, { maxDocumentBytes });
      const messageArb = fc.record({
        kind: fc.constantFrom<Kind>("human", "ai", "tool"),
        character: fc.constantFrom(...CHARACTERS),
        bytes: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: maxContentBytes - 8_000, max: maxContentBytes })),
      });
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(messageArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }), async (drawn) => {
          let n = 0;
          const steps = drawn.map((step) =>
            step.map(({ kind, character, bytes }) => message(kind, character.char.repeat(Math.floor(bytes / character.bytes)), n++)),
          );
          const threadId = `t${run++}`;
          const written = await writeSteps(saver, threadId, steps);
          const read = (await saver.getTuple({ configurable: { thread_id: threadId } }))?.checkpoint.channel_values.messages as BaseMessage[];
          expect(read.map((m) => m.content)).toEqual(written.map((m) => m.content));
        }),
        { numRuns: 20 },
      );
    });

    it("throws DocumentTooLargeError before writing anything when one message is larger than a document", async () => {
      const { saver, db } = await newSaver(test, { maxDocumentBytes: 64 * 1024 });
      await expect(writeSteps(saver, "t", [[message("human", "a".repeat(70 * 1024), 0)]])).rejects.toThrow(DocumentTooLargeError);
      expect(await countThreadDocuments(db, "t")).toBe(0);
    });
  });
});
