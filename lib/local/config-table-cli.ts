import { readFile, writeFile } from "node:fs/promises";
import { withConfigTable } from "../config/config-table.js";

/** `npm run docs:config`: writes the configuration table of docs/configuration.md from the settings in lib/config. */
const PAGE = new URL("../../docs/configuration.md", import.meta.url);
const before = await readFile(PAGE, "utf8");
const after = withConfigTable(before);
if (after !== before) await writeFile(PAGE, after);
console.log(after === before ? "docs/configuration.md: configuration table up to date" : "docs/configuration.md: configuration table written");
