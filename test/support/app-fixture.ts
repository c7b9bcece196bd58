import { MongoClient } from "mongodb";
import { afterAll } from "vitest";
import { createApp, type App, type AppOptions } from "../../lib/app.js";
import { loadConfig, type Config } from "../../lib/config/config.js";
import { mongoUri, type TestDatabase } from "./mongo.js";
import { useTestDatabase, type StoreFixtureOptions } from "./store-fixture.js";

export interface AppFixtureOptions extends StoreFixtureOptions {
  /** Settings besides the database, as the environment spells them (`{ RETENTION_DAYS: "7" }`). Default: none. */
  env?: Record<string, string>;
  /** What every app of the file is made with, unless `appWith` says otherwise (its tools, a logger). Default: none. */
  app?: AppOptions;
}

export interface AppFixture {
  /** The file's own database ({@link useTestDatabase}); its client is the one the apps share. */
  database: TestDatabase;
  /** The configuration of the file's apps: the file's database and `env`. */
  config: Config;
  /**
   * A new app on the file's database, as a new container makes one: the file's `app` options, then
   * these; `configure` changes a fresh copy of `config` for this app only. Closed after the file.
   */
  appWith(options?: AppOptions, configure?: (config: Config) => void): Promise<App>;
  /** A client of its own on the same server, closed after the file: an app on it is a container with its own pool. */
  newClient(): Promise<MongoClient>;
}

/**
 * The app over a database of the file's own, registered as the file's vitest hooks: the database as
 * {@link useTestDatabase} sets it up (emptied before each test unless `clearBeforeEach: false`),
 * `config` for it, and `appWith` to make apps on it. The one way a test file makes an app; a
 * test that needs only stores uses `useStoreFixture`.
 */
export function useTestApp(prefix: string, options: AppFixtureOptions = {}): AppFixture {
  const database = useTestDatabase(prefix, options);
  const load = () => loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: database.dbName, ...options.env });
  const config = load();
  const apps: App[] = [];
  const clients: MongoClient[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await Promise.all(clients.map((client) => client.close()));
  });
  return {
    database,
    config,
    async appWith(overrides = {}, configure) {
      const own = configure ? load() : config;
      configure?.(own);
      const app = await createApp(own, { mongoClient: database.client, ...options.app, ...overrides });
      apps.push(app);
      return app;
    },
    async newClient() {
      const client = new MongoClient(mongoUri());
      clients.push(client);
      await client.connect();
      return client;
    },
  };
}
