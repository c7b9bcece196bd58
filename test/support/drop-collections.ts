import type { Db } from "mongodb";
import { COLLECTIONS } from "../../lib/store/collections.js";

/** The embedded server has neither dropDatabase nor listCollections: drop every known collection. */
export async function dropKnownCollections(db: Db): Promise<void> {
  const names = Object.values(COLLECTIONS);
  await Promise.all(
    names.map((name) =>
      db
        .collection(name)
        .drop()
        .catch(() => undefined),
    ),
  );
}
