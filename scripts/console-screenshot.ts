/**
 * `npm run docs:screenshot` regenerates the README's console screenshot (`docs/console.png`): it
 * starts the local server as `npm start` does (the offline model, the sample tools, the default
 * settings, the embedded database), drives the console in Chromium through two turns that use a
 * tool, opens turn 2's model view and saves the page. Nothing is downloaded: the browser is the one
 * the console's browser tests use (`CHROMIUM_PATH`, or where `test/support/chromium.ts` finds it).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Page } from "playwright-core";
import { loadConfig } from "../lib/config/config.js";
import { startLocalServer } from "../lib/local/local-server.js";
import { silentLogger } from "../lib/logger.js";
import { SAMPLE_QUESTIONS } from "../lib/tools/sample-questions.js";
import { CHROMIUM_ARGS, findChromium } from "../test/support/chromium.js";

/** The page's size in the screenshot: a desktop screen, wide enough for the chat and the inspector's two columns. */
export const SCREENSHOT_VIEWPORT = { width: 1600, height: 1000 } as const;
/** Where the README shows it. */
export const SCREENSHOT_PATH = resolve(import.meta.dirname, "../docs/console.png");
/** The two questions of the screenshot: a query, then a follow-up on it, so turn 2's view condenses turn 1. */
export const SCREENSHOT_QUESTIONS = [SAMPLE_QUESTIONS.sql_query[0], SAMPLE_QUESTIONS.sql_query[1]] as const;
/** How long one turn may take to show its answer. */
const TURN_TIMEOUT_MS = 30_000;

/** Signs in, asks the questions, and opens the last turn's model view. */
async function driveConsole(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel("User", { exact: true }).fill("alice");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#session-user", { hasText: "alice" }).waitFor();
  await page.getByRole("button", { name: "New conversation" }).click();
  const composer = page.getByLabel("Message");
  for (const [i, question] of SCREENSHOT_QUESTIONS.entries()) {
    await composer.fill(question);
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".chat-message.assistant").nth(i).waitFor({ timeout: TURN_TIMEOUT_MS });
    // The answer streams, then the thread reloads with the turn's buttons.
    await page.getByRole("button", { name: `Inspect turn ${i + 1}: what the model was sent` }).waitFor({ timeout: TURN_TIMEOUT_MS });
  }
  const last = SCREENSHOT_QUESTIONS.length;
  await page.getByRole("button", { name: `Inspect turn ${last}: what the model was sent` }).click();
  await page
    .getByRole("complementary")
    .getByRole("heading", { level: 2, name: `Turn ${last}: what the model was sent` })
    .waitFor();
  // The inspector's bars grow in: let them settle, and no caret blinks in the picture.
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await page.waitForTimeout(500);
}

/** Starts a server, drives the console and writes the screenshot to `out`. */
export async function captureConsole(out: string = SCREENSHOT_PATH): Promise<void> {
  const executablePath = findChromium();
  if (!executablePath) throw new Error("no Chromium or Chrome found: set CHROMIUM_PATH, or run: bash .ci/install-chromium.sh");
  const localDir = await mkdtemp(join(tmpdir(), "threadwise-screenshot-"));
  const server = await startLocalServer(loadConfig({}), { port: 0, localDir, app: { logger: silentLogger } });
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage({ viewport: SCREENSHOT_VIEWPORT, colorScheme: "light", reducedMotion: "reduce" });
    await driveConsole(page, server.url);
    await page.screenshot({ path: out });
  } finally {
    await browser.close();
    await server.close();
    await rm(localDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = process.argv[2] ? resolve(process.argv[2]) : SCREENSHOT_PATH;
  await captureConsole(out);
  process.stdout.write(`wrote ${out} (${SCREENSHOT_VIEWPORT.width}×${SCREENSHOT_VIEWPORT.height})\n`);
  // The embedded database's process and the driver's timers are closed; nothing else should hold the loop.
  process.exit(0);
}
