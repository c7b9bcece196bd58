/** Prints the sizing table of docs/deploying.md ("Sizing") from infra/sizing.ts: `npx tsx scripts/sizing.ts`. */
import { sizingTable } from "../infra/sizing.js";

process.stdout.write(`${sizingTable()}\n`);
