import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the suite's data is kept. */
export const CASES_DIR = join(dirname(fileURLToPath(import.meta.url)), "cases");
