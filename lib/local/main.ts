import { loadConfig } from "../config/config.js";
import { startLocalServer } from "./local-server.js";

const config = loadConfig();
const server = await startLocalServer(config);
console.log(`threadwise listening on ${server.url}`);
console.log(`console at ${server.url}/`);
console.log(`mongodb ${server.mongodbUri}`);
console.log(`model provider ${config.model.provider}`);
console.log("get a token with: npm run token -- <user> [--tenant <tenant>]");

let closing = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    server.close().then(() => process.exit(0), () => process.exit(1));
  });
}
