/**
 * After a deploy: `npm run smoke -- <api url> --token <jwt> [--streaming-url <url>]` runs /healthz,
 * one authenticated turn and one queued turn against the stage, and one streamed turn through the
 * streaming URL when given (docs/deploying.md, "Smoke test"). One line per step; the exit code is 1
 * when a step failed.
 */
import { parseCliArgs } from "../lib/local/cli-args.js";
import { runSmoke } from "../lib/ops/index.js";

const USAGE = "usage: npm run smoke -- <api url> --token <jwt> [--streaming-url <url>] [--timeout-seconds 120]";
const { values, positionals } = parseCliArgs(USAGE, {
  allowPositionals: true,
  options: { token: { type: "string" }, "streaming-url": { type: "string" }, "timeout-seconds": { type: "string" } },
});
const [apiUrl] = positionals;
if (!apiUrl || !values.token) {
  process.stderr.write(`error: ${apiUrl ? "--token is required" : "name the API URL (the ApiUrl stack output)"}\n${USAGE}\n`);
  process.exit(2);
}
const timeout = values["timeout-seconds"] ? Number(values["timeout-seconds"]) * 1000 : undefined;
const steps = await runSmoke({ apiUrl, token: values.token, streamingUrl: values["streaming-url"], turnTimeoutMs: timeout });
for (const s of steps) process.stdout.write(`${s.ok ? "ok  " : "FAIL"} ${s.step}: ${s.detail}\n`);
process.exit(steps.every((s) => s.ok) ? 0 : 1);
