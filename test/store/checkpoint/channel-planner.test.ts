import { type BSON, MongoClient, type CommandStartedEvent } from "mongodb";
import { ChannelVersionConflictError } from "../../../lib/errors.js";
import { DEFAULT_INLINE_VALUE_BYTES } from "../../../lib/store/threadwise-saver.js";
import { mongoUri } from "../../support/mongo.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { checkpointWith, documents, loopMetadata as metadata, newSaver as newSaverIn } from "./saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("planner", { clearBeforeEach: false });

const newSaver = (options: Parameters<typeof newSaverIn>[1] = {}) => newSaverIn(test, options);
const thread = (thread_id = "t") => ({ configurable: { thread_id } });
/** A string value too large to be kept in a header. */
const large = (text: string) => text.padEnd(DEFAULT_INLINE_VALUE_BYTES + 1, ".");

describe("ChannelPlanner", () => {
  describe("plan (through ThreadwiseSaver.put)", () => {
    it("writes only the channel versions named in newVersions", async () => {
      const { saver, db } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ big: large("unchanged"), other: large("1") }, { big: 1, other: 1 }), metadata, {
        big: 1,
        other: 1,
      });
      await saver.put(first, checkpointWith({ big: large("unchanged"), other: large("2") }, { big: 1, other: 2 }), metadata, { other: 2 });
      const blobs = await documents(db, "checkpoint_blobs", "t");
      expect(blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["big@1", "other@1", "other@2"]);
    });

    it("throws ChannelVersionConflictError when a version is written again with another value, keeping the first", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ a: large("first") }, { a: 1 }), metadata, { a: 1 });
      await expect(saver.put(thread(), checkpointWith({ a: large("second") }, { a: 1 }), metadata, { a: 1 })).rejects.toThrow(ChannelVersionConflictError);
      expect((await saver.getTuple(first))?.checkpoint.channel_values).toEqual({ a: large("first") });
    });

    it("keeps a small value in the checkpoint's header rather than in a blob", async () => {
      const { saver, db } = await newSaver();
      const config = await saver.put(thread(), checkpointWith({ small: "s", big: large("b") }, { small: 1, big: 1 }), metadata, { small: 1, big: 1 });
      expect((await documents(db, "checkpoint_blobs", "t")).map((b) => b.channel)).toEqual(["big"]);
      expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ small: "s", big: large("b") });
    });

    it("returns channel values written by earlier checkpoints", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ big: large("unchanged"), small: 1 }, { big: 1, small: 1 }), metadata, { big: 1, small: 1 });
      const second = await saver.put(first, checkpointWith({ big: large("unchanged"), small: 2 }, { big: 1, small: 2 }), metadata, { small: 2 });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ big: large("unchanged"), small: 2 });
    });

    it("returns every value of a checkpoint put beside its source with no new versions, as updateState's __copy__ puts one", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ big: large("b"), small: 1, list: ["a"] }, { big: 1, small: 1, list: 1 }), metadata, {
        big: 1,
        small: 1,
        list: 1,
      });
      const source = checkpointWith({ big: large("b"), small: 2, list: ["a", "b"] }, { big: 1, small: 2, list: 2 });
      await saver.put(first, source, metadata, { small: 2, list: 2 });
      // The copy's parent is its source's parent; its values are the source's, none of them new.
      const copy = await saver.put(first, { ...source, id: checkpointWith({}, {}).id }, { ...metadata, source: "fork" }, {});
      expect((await saver.getTuple(copy))?.checkpoint.channel_values).toEqual({ big: large("b"), small: 2, list: ["a", "b"] });
    });

    it("stores only the items a list version appends to its parent's version", async () => {
      const monitored = new MongoClient(mongoUri(), { monitorCommands: true });
      onTestFinished(() => monitored.close());
      const { saver } = await newSaver({ client: monitored });
      const long = Array.from({ length: 40 }, (_, i) => ({ item: i, text: "x".repeat(1000) }));
      const first = await saver.put(thread(), checkpointWith({ list: long }, { list: 1 }), metadata, { list: 1 });
      const longer = [...long, { item: "appended" }];
      const written: BSON.Document[] = [];
      const listener = (event: CommandStartedEvent) => {
        if (event.commandName === "update" && event.command.update === "checkpoint_blobs") written.push(...event.command.updates);
      };
      monitored.on("commandStarted", listener);
      const second = await saver.put(first, checkpointWith({ list: longer }, { list: 2 }), metadata, { list: 2 });
      monitored.off("commandStarted", listener);
      expect(written).toHaveLength(1);
      expect(written[0].u.$setOnInsert.items).toHaveLength(1);
      expect((await saver.getTuple(first))?.checkpoint.channel_values).toEqual({ list: long });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ list: longer });
    });

    it("stores a list that is not its parent's list extended whole, and reads both back", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ list: ["a", "b", "c"] }, { list: 1 }), metadata, { list: 1 });
      const second = await saver.put(first, checkpointWith({ list: ["a", "changed", "c", "d"] }, { list: 2 }), metadata, { list: 2 });
      expect((await saver.getTuple(first))?.checkpoint.channel_values).toEqual({ list: ["a", "b", "c"] });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ list: ["a", "changed", "c", "d"] });
    });
  });
});
