import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import { Server } from "node:net";

/**
 * The unit tier's set-up file (vitest.config.ts, projects `unit` and `unit-sequential`): a
 * `*.unit.test.ts` file starts nothing. The tier has no global set-up, so no embedded database
 * (`mongoUri()` throws), and here every way to start a server (`net`, `http`, `https` all listen
 * through `net.Server`) or a child process throws, naming the rule. `test/architecture/test-tiers.unit.test.ts`
 * checks the same statically, in `npm test` too.
 */

function refuse(what: string): never {
  throw new Error(`a unit test (*.unit.test.ts) ${what}: the unit tier starts nothing; drop ".unit" from the file's name (docs/testing.md, "Tiers")`);
}

Server.prototype.listen = function listen(): never {
  refuse("starts a server");
};

const CHILD_PROCESS_FUNCTIONS = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;
for (const name of CHILD_PROCESS_FUNCTIONS) {
  Object.defineProperty(childProcess, name, { value: () => refuse(`starts a child process (${name})`), writable: true, configurable: true });
}
// Named imports (`import { execFile } from "node:child_process"`) read the ES module's own bindings.
syncBuiltinESMExports();
