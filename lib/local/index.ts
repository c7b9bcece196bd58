export { startLocalServer, type LocalServer, type LocalServerOptions } from "./local-server.js";
export { startEmbeddedMongo, EmbeddedMongoError, DEFAULT_START_TIMEOUT_MS, type EmbeddedMongo, type EmbeddedMongoOptions } from "./embedded-mongo.js";
export { loadOrCreateLocalKeys, mintLocalToken, DEFAULT_LOCAL_DIR, DEFAULT_TOKEN_TTL, type LocalKeys, type TokenClaims } from "./local-keys.js";
export { consoleRoutes, CONSOLE_CONTENT_SECURITY_POLICY, DEFAULT_CONSOLE_DIR, type ConsoleRoutesOptions } from "./console-routes.js";
export { toHttpRequest, writeHttpResponse } from "./node-http-adapter.js";
