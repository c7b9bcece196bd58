import { parseArgs } from "node:util";
import { enforceNodeVersion } from "./node-version.js";

enforceNodeVersion({ quiet: true });
const { loadOrCreateLocalKeys, mintLocalToken } = await import("./local-keys.js");

const USAGE = "usage: npm run token -- <user> [--tenant <tenant>] [--roles a,b] [--ttl 12h]";
/** The lifetimes jose accepts, in the forms worth telling a user about. */
const TTL = /^\d+(\.\d+)? ?(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)$/i;

/** Prints one line and exits: usage mistakes never show a stack trace. */
function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

const { positionals, values } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: { tenant: { type: "string" }, roles: { type: "string" }, ttl: { type: "string" }, help: { type: "boolean", short: "h" } },
    });
  } catch (error) {
    // Node's message goes on to explain `--`; its first sentence names the mistake.
    return fail(`error: ${(error as Error).message.split(". ")[0]}`);
  }
})();
if (values.help) {
  console.log(`${USAGE}\nMints a token the local server accepts (valid for 12h unless --ttl says otherwise).`);
  process.exit(0);
}
const user = positionals[0];
if (!user) fail("error: name the user the token is for");
if (positionals.length > 1) fail(`error: one user only, got ${positionals.length}`);
if (values.ttl !== undefined && !TTL.test(values.ttl)) fail(`error: --ttl "${values.ttl}" is not a lifetime such as 30m, 12h or 7d`);
if (values.tenant === "") fail("error: --tenant is empty");

const keys = await loadOrCreateLocalKeys();
console.log(
  await mintLocalToken(keys, {
    user,
    tenant: values.tenant,
    roles: values.roles?.split(",").filter(Boolean),
    expiresIn: values.ttl,
  }),
);
