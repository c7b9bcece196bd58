import { loadConfig } from "../config/config.js";
import { channelCredentialsFromEnv } from "../config/credentials.js";
import { LocalServerError, startLocalServer } from "./local-server.js";

const config = loadConfig();
const channels = channelCredentialsFromEnv(process.env);
const server = await startLocalServer(config, { channels }).catch((error: unknown) => {
  if (!(error instanceof LocalServerError)) throw error;
  console.error(error.message);
  process.exit(1);
});
console.log(`threadwise listening on ${server.url}`);
console.log(`console at ${server.url}/`);
console.log(`mongodb ${server.mongodbUri}`);
console.log(`model provider ${config.model.provider}`);
console.log(`slack ${channels.slack ? `on: POST ${server.url}/slack/events` : "off (set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN)"}`);
console.log(`teams ${channels.teams ? `on: POST ${server.url}/teams/messages` : "off (set TEAMS_APP_ID and TEAMS_APP_PASSWORD)"}`);
console.log("get a token with: npm run token -- <user> [--tenant <tenant>]");

let closing = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    server.close().then(() => process.exit(0), () => process.exit(1));
  });
}
