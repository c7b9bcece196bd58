import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** `bench/results/`, where `--write` puts a benchmark's tracked results. */
export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "results");

/** Writes `files` (name → content) into `bench/results/` and says so; a run without `--write` writes nothing. */
export async function writeResults(files: Record<string, string>): Promise<void> {
  await mkdir(RESULTS_DIR, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    await writeFile(join(RESULTS_DIR, name), content);
    console.log(`wrote bench/results/${name}`);
  }
}
