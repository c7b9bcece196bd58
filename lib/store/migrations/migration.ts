import type { Db } from "mongodb";

/**
 * One numbered migration of the database, in `lib/store/migrations/NNN-<name>.ts`. `up` brings
 * data stored by earlier releases to the current format; it must be idempotent (a set-up that
 * stops halfway runs it again) and safe while the app runs. It returns `false` when it could not
 * finish (a thread being pruned meanwhile): the version is then not recorded and the migration
 * runs again at the next set-up.
 */
export interface Migration {
  /** 1, 2, …: the order migrations run in, and the schema version a database has once it ran. */
  readonly version: number;
  /** Lowercase words, as in the file name. */
  readonly name: string;
  up(db: Db): Promise<boolean | undefined>;
}
