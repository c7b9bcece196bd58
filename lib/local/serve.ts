import { checkModelCredentials } from "../agent/chat-model.js";
import { loadConfig, type Config } from "../config/config.js";
import { channelCredentialsFromEnv } from "../config/credentials.js";
import { startLocalServer } from "./local-server.js";
import { explainStartupError, printableMongoUri } from "./startup-error.js";

/** Longest a shutdown on SIGINT or SIGTERM may take before the process exits anyway (an orchestrator's kill follows soon after). */
const SHUTDOWN_DEADLINE_MS = 4_500;

/** Starts the server, or exits with one line that says what to fix. */
async function start() {
  let config: Config | undefined;
  try {
    config = loadConfig();
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
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
console.log(`threadwise listening on ${server.url}`);
console.log(`console at ${server.url}/`);
console.log(`mongodb ${printableMongoUri(server.mongodbUri)}`);
console.log(`model provider ${config.model.provider}`);
console.log(`slack ${channels.slack ? `on: POST ${server.url}/slack/events` : "off (set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN)"}`);
console.log(`teams ${channels.teams ? `on: POST ${server.url}/teams/messages` : "off (set TEAMS_APP_ID and TEAMS_APP_PASSWORD)"}`);
console.log("get a token with: npm run token -- <user> [--tenant <tenant>]");
