import type { StructuredLogger } from "../logger.js";
import { ensureDatabaseSetUp } from "../setup-database.js";
import type { ThreadwiseDatabase } from "../store/database.js";
import { startEmbeddedMongo, type EmbeddedMongo } from "./embedded-mongo.js";
import { PeriodicTask } from "./periodic-task.js";

/** How often the local server checks that its database is still set up (one `findOne`). */
export const DEFAULT_DATABASE_WATCH_MS = 2_000;

export interface DatabaseWatchOptions {
  database: ThreadwiseDatabase;
  /** The embedded server the local server started, restarted on the same port when it dies. Default: none (`MONGODB_URI`). */
  embedded?: EmbeddedMongo;
  logger: Pick<StructuredLogger, "warn" | "error">;
  /** Default: {@link DEFAULT_DATABASE_WATCH_MS}. */
  intervalMs?: number;
  /** Starts the replacement embedded server. Default: `startEmbeddedMongo` on the dead one's port. */
  restart?: (port: number) => Promise<EmbeddedMongo>;
}

const errorName = (error: unknown) => (error instanceof Error ? error.name : "unknown");

/**
 * Local mode notices its database. In AWS the deploy step sets the database up and a dead
 * database is the operator's alarm; on one machine nobody watches, so:
 * - the embedded server, when it exits without being asked, is started again on the same port
 *   (empty: it keeps nothing on disk), and the driver, which keeps the same URI, reconnects;
 * - a database that has lost its set-up (that new embedded server, or a fresh MongoDB that
 *   appeared behind `MONGODB_URI`) is set up again within one interval, so turns never run
 *   without the indexes and `/readyz` says so only until then.
 * Each is one line in the log.
 */
export class DatabaseWatch {
  #embedded: EmbeddedMongo | undefined;
  #stopping = false;
  readonly #task: PeriodicTask;
  readonly #options: DatabaseWatchOptions;

  constructor(options: DatabaseWatchOptions) {
    this.#options = options;
    this.#embedded = options.embedded;
    this.#task = new PeriodicTask(
      () => this.#check(),
      options.intervalMs ?? DEFAULT_DATABASE_WATCH_MS,
      // A database that does not answer is the API's 503 already; the watch tries again next tick.
      () => undefined,
    );
  }

  /** The embedded server in use now (a restart replaces it). */
  get embedded(): EmbeddedMongo | undefined {
    return this.#embedded;
  }

  start(): void {
    if (this.#embedded) this.#follow(this.#embedded);
    this.#task.start();
  }

  /** Stops watching: no check runs after this resolves, and the embedded server is not restarted (its owner stops it). */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#task.stop();
  }

  async #check(): Promise<void> {
    if (await ensureDatabaseSetUp(this.#options.database)) {
      this.#options.logger.warn("database set up again", { reason: "it had lost its set-up (a new or restarted database)" });
    }
  }

  #follow(embedded: EmbeddedMongo): void {
    void embedded.exited.then(async (exit) => {
      if (this.#stopping || this.#embedded !== embedded) return;
      this.#options.logger.error("the embedded MongoDB server exited; starting it again, empty, on the same port", { ...exit });
      try {
        const next = await (this.#options.restart ?? ((port) => startEmbeddedMongo({ port })))(embedded.port);
        if (this.#stopping) return void (await next.stop());
        this.#embedded = next;
        this.#follow(next);
        await this.#check();
      } catch (error) {
        this.#options.logger.error("cannot start the embedded MongoDB server again; stop the server (Ctrl-C) and start it again", {
          error: errorName(error),
        });
      }
    });
  }
}
