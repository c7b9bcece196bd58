import type { Db } from "mongodb";
import { ThreadwiseSaver } from "../threadwise-saver.js";
import type { Migration } from "./migration.js";

/**
 * Threads that releases before issue 28 stored as a whole copy of the message list per turn are
 * rewritten into bounded links (`ThreadwiseSaver.compactStoredLists`; nothing a checkpoint reads
 * changes). Not finished while a thread is being pruned: that thread is left for the next set-up.
 */
export const compactStoredLists: Migration = {
  version: 2,
  name: "compact-stored-lists",
  async up(db: Db) {
    const saver = new ThreadwiseSaver({ client: db.client, dbName: db.databaseName });
    const result = await saver.compactStoredLists();
    return result.skipped === 0;
  },
};
