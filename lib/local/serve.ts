import { checkModelCredentials } from "../agent/chat-model.js";
import { loadConfig, type Config } from "../config/config.js";
import { channelCredentialsFromEnv } from "../config/credentials.js";
import { startLocalServer } from "./local-server.js";
import { settingNameWarnings } from "../config/setting-names.js";
import { modelFacts, startupBanner } from "./startup-banner.js";
import { explainStartupError } from "./startup-error.js";
import { registerLocalTracing, type LocalTracing } from "./tracing.js";

/** Longest a shutdown on SIGINT or SIGTERM may take before the process exits anyway (an orchestrator's kill follows soon after). */
const SHUTDOWN_DEADLINE_MS = 4_500;

let tracing: LocalTracing | undefined;

/** Starts the server, or exits with one line that says what to fix. */
async function start() {
  // Before anything can fail: a misspelt setting is often why the next line fails.
  for (const warning of settingNameWarnings(process.env)) console.warn(warning);
  let config: Config | undefined;
  try {
    config = loadConfig();
    // Before the app: its spans need the provider (TRACING_EXPORTER, docs/operations.md "Tracing").
    tracing = registerLocalTracing(config.tracing);
    const channels = channelCredentialsFromEnv(process.env);
    await checkModelCredentials(config.model);
    return { config, channels, server: await startLocalServer(config, { channels }) };
  } catch (error) {
    console.error(explainStartupError(error, { mongodbUri: config?.mongodbUri, serverSelectionTimeoutMs: config?.mongo.serverSelectionTimeoutMs }));
    process.exit(1);
  }
}

const { config, channels, server } = await start();
// Before the lines that say it listens: a signal sent on reading them finds its handler.
let closing = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    // Whatever holds the close (a client, a turn, the database), the process is gone within 5 s.
    setTimeout(() => {
      console.error(`shutdown took over ${SHUTDOWN_DEADLINE_MS} ms; exiting`);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    server
      .close()
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  });
}
for (const line of startupBanner({
  url: server.url,
  mongodbUri: server.mongodbUri,
  embedded: config.mongodbUri === undefined,
  ...modelFacts(config.model),
  tools: server.app.tools.names(),
  toolRoles: config.tools.roles,
  approvals: config.tools.approvals,
  recall: config.recall,
  channels: { slack: channels.slack !== undefined, teams: channels.teams !== undefined },
}))
  console.log(line);
