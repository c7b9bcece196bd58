import { parseArgs } from "node:util";
import { loadOrCreateLocalKeys, mintLocalToken } from "./local-keys.js";

const USAGE = "usage: npm run token -- <user> [--tenant <tenant>] [--roles a,b] [--ttl 12h]";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { tenant: { type: "string" }, roles: { type: "string" }, ttl: { type: "string" } },
});
const user = positionals[0];
if (!user || positionals.length > 1) {
  console.error(USAGE);
  process.exit(2);
}
const keys = await loadOrCreateLocalKeys();
console.log(
  await mintLocalToken(keys, {
    user,
    tenant: values.tenant,
    roles: values.roles?.split(",").filter(Boolean),
    expiresIn: values.ttl,
  }),
);
