import { readFile, writeFile } from "node:fs/promises";
import { withConfigTable } from "../config/config-table.js";

/** `npm run docs:config`: writes the README's configuration table from the settings in lib/config. */
const README = new URL("../../README.md", import.meta.url);
const before = await readFile(README, "utf8");
const after = withConfigTable(before);
if (after !== before) await writeFile(README, after);
console.log(after === before ? "README.md: configuration table up to date" : "README.md: configuration table written");
