import { mkdir } from "node:fs/promises";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { CHROMIUM_ARGS, findChromium } from "../support/chromium.js";
import { conversationTitle } from "../../lib/agent/conversation-title.js";
import { BIG_REPORT_EXAMPLE, bigReportTool } from "./big-report-tool.js";

/** Chromium or Chrome where it is installed (`CHROMIUM_PATH`, Debian's package that `.ci/install-chromium.sh` installs, …). */
const FOUND_CHROMIUM = findChromium();
const CHROMIUM = FOUND_CHROMIUM ?? "chromium";
const SCREENSHOT = "test-results/console.png";
const SECOND_QUESTION = "What did the report show?";
const VIEW_BUDGET = 4_000;
const CACHE_MIN_TOKENS = 100;
/** Small, so a message over the limit is quick to type. */
const MAX_MESSAGE_CHARS = 1_000;
/** The chat's least width beside the inspector on a 1280-pixel screen. */
const MIN_CHAT_WIDTH = 320;
/** How long a turn may take to show up on a loaded machine. */
const TURN_POLL = { timeout: 15_000 };

const haveChromium = FOUND_CHROMIUM !== undefined;
// In CI a missing browser fails the run; on a workstation the suite says why it is skipped.
const inCi = process.env.CI === "true" || process.env.CI === "1";
if (!haveChromium && !inCi) console.warn("console e2e skipped: no Chromium or Chrome found (set CHROMIUM_PATH, or run: bash .ci/install-chromium.sh)");
const describeWithBrowser = haveChromium || inCi ? describe : describe.skip;

/** Holds the big_report tool until the test has seen the page report it running. */
function gate() {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { pass: () => opened, open: () => release() };
}

const format = (value: number) => new Intl.NumberFormat("en").format(value);

/** Visible text under WCAG AA contrast (4.5:1, 3:1 for large text) against its nearest opaque background. */
function lowContrastTexts(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const rgb = (css: string) => (css.match(/[\d.]+/g) ?? []).map(Number);
    const luminance = ([r, g, b]: number[]) => {
      const c = [r, g, b].map((v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4));
      return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    };
    const background = (el: Element | null): number[] => {
      for (let node = el; node; node = node.parentElement) {
        const color = rgb(getComputedStyle(node).backgroundColor);
        if (color.length === 3 || color[3] === 1) return color.slice(0, 3);
      }
      return [255, 255, 255];
    };
    const failures: string[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!el || !node.textContent?.trim() || el.closest("[hidden], .visually-hidden, .skip-link, :disabled")) continue;
      if (el.getClientRects().length === 0) continue;
      const style = getComputedStyle(el);
      const [l1, l2] = [luminance(rgb(style.color)), luminance(background(el))].sort((a, b) => b - a);
      const ratio = (l1 + 0.05) / (l2 + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) failures.push(`${ratio.toFixed(2)}: ${node.textContent.trim().slice(0, 40)}`);
    }
    return failures;
  });
}

/**
 * Words of these elements' text laid out on more than one line: a break inside a word. A `<wbr>`
 * (after an underscore of a tool's name) splits a word into pieces that may break apart.
 */
function wordsBrokenAcrossLines(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((selector) => {
    const broken: string[] = [];
    for (const element of Array.from(document.querySelectorAll(selector))) {
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const word of (node.textContent ?? "").matchAll(/\S+/g)) {
          const range = document.createRange();
          range.setStart(node, word.index);
          range.setEnd(node, word.index + word[0].length);
          const lines = new Set(Array.from(range.getClientRects()).map((rect) => Math.round(rect.top)));
          if (lines.size > 1) broken.push(word[0]);
        }
      }
    }
    return broken;
  }, selector);
}

describeWithBrowser("console", () => {
  let t: TestServer;
  let browser: Browser;
  let page: Page;
  const toolGate = gate();
  const pageErrors: string[] = [];

  beforeAll(async () => {
    if (!haveChromium) throw new Error(`${CHROMIUM} is missing: run .ci/install-chromium.sh`);
    // A budget small enough that the bars in the screenshot have visible lengths.
    // A small minimum per cache point, so these short views carry cache points to show.
    t = await startTestServer(
      { VIEW_TOTAL_BUDGET: String(VIEW_BUDGET), PROMPT_CACHE_MIN_TOKENS: String(CACHE_MIN_TOKENS), MAX_MESSAGE_CHARS: String(MAX_MESSAGE_CHARS) },
      { app: { tools: [bigReportTool({ gate: toolGate.pass })] } },
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    // CSP violations and script errors show up here; the page must have none.
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(message.text());
    });
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("dialog", (dialog) => void dialog.accept());
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const turnAt = async (token: string, conversationId: string, position: number) => {
    const { messages } = (await t.call("GET", `/v1/conversations/${conversationId}/messages`, { token })).body;
    const turnIds = [...new Set(messages.map((m: { turnId: string }) => m.turnId))] as string[];
    return (await t.call("GET", `/v1/conversations/${conversationId}/turns/${turnIds[position]}`, { token })).body;
  };

  it("signs in as a local user, chats through a tool call with progress, and shows each call's view beside the stored thread", async () => {
    await page.goto(t.url);
    await page.getByLabel("User", { exact: true }).fill("alice");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("#session-user").textContent()).toBe("alice");

    await page.getByRole("button", { name: "New conversation" }).click();
    const composer = page.getByLabel("Message");
    // The empty conversation lists the server's tools for this user and questions that work; one fills the message box.
    const token = (await page.evaluate(() => sessionStorage.getItem("threadwise.token"))) as string;
    const listed = (await t.call("GET", "/local/tools", { token })).body;
    const emptyState = page.getByRole("region", { name: "What you can ask" });
    await emptyState.waitFor();
    expect(await emptyState.locator(".tool-list li").evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.tool))).toEqual(
      listed.tools.map((tool: { name: string }) => tool.name),
    );
    expect(listed.tools.map((tool: { name: string }) => tool.name)).toEqual(["big_report", "read_tool_output", "search_conversation"]);
    expect(await emptyState.locator(".tool-list li").first().textContent()).toBe('big_report {"rows": integer}Sales report with one line per order.');
    expect(await emptyState.getByRole("list", { name: "Example questions" }).getByRole("button").allTextContents()).toEqual([
      ...listed.conversation,
      BIG_REPORT_EXAMPLE,
    ]);
    await emptyState.getByRole("button", { name: BIG_REPORT_EXAMPLE }).click();
    expect(await composer.inputValue()).toBe(BIG_REPORT_EXAMPLE);
    await composer.press("Enter");

    // While the tool is held, the page must say which step and which tool the turn is on.
    const progress = page.getByRole("status");
    await progress.locator("text=Running tool big_report").waitFor({ timeout: 15_000 });
    expect(await progress.getAttribute("data-step")).toBe("tool");
    // The clock moves while the tool runs, though no event arrives meanwhile.
    const seconds = async () => Number(/(\d+\.\d) s$/.exec((await progress.textContent()) ?? "")?.[1]);
    const before = await seconds();
    await expect.poll(seconds, { timeout: 5_000 }).toBeGreaterThanOrEqual(before + 0.5);
    expect(await progress.textContent()).toMatch(/^Running tool big_report · /);
    toolGate.open();
    await page.locator(".chat-message.assistant").first().waitFor();
    expect(await progress.textContent()).toBe("");
    expect(await emptyState.isHidden()).toBe(true);
    // The title names the tool, not its JSON arguments.
    await expect.poll(() => page.locator(".conversation.current .conversation-title").textContent()).toBe("big_report call");

    await composer.fill(SECOND_QUESTION);
    await page.getByRole("button", { name: "Send" }).click();
    // The second turn streams and then reloads the thread: on a loaded machine that is longer than the poll's default second.
    await expect.poll(() => page.locator(".chat-message.assistant").count(), { timeout: 15_000 }).toBe(2);

    const conversationId = (await t.call("GET", "/v1/conversations", { token: token as string })).body.conversations[0].conversationId;
    const turn1 = await turnAt(token as string, conversationId, 0);
    const turn2 = await turnAt(token as string, conversationId, 1);
    expect(turn1.calls).toHaveLength(3);
    const omitted = turn1.calls[2].stats.omittedOutputs[0];
    expect(omitted).toMatchObject({ toolName: "big_report", reason: "over-threshold" });

    // Turn 1: the big output was replaced in the view by a notice naming its artifact; the local
    // model then read part of it with read_tool_output and answered.
    await page.getByRole("button", { name: "Inspect turn 1: what the model was sent" }).click();
    const inspector = page.getByRole("complementary");
    await expect.poll(() => inspector.getByRole("heading", { level: 2 }).textContent()).toBe("Turn 1: what the model was sent");
    const tabs = inspector.getByRole("tab");
    expect(await tabs.allTextContents()).toEqual(["Call 1 → big_report", "Call 2 → read_tool_output", "Call 3 → answer"]);
    expect(await inspector.getByRole("tab", { selected: true }).textContent()).toBe("Call 3 → answer");
    const view = inspector.locator(".column-view");
    const notice = view.locator('[data-kind="notice"]');
    expect(await notice.count()).toBe(1);
    expect(await notice.locator(".badge").textContent()).toBe("notice standing for the big_report output (over-threshold)");
    expect(await notice.locator(".msg-text").textContent()).toContain('[Output of tool "big_report" not shown');
    expect(await inspector.locator('[data-fact="notices"]').textContent()).toContain(
      `big_report output replaced by a notice: ${format(omitted.tokens)} tokens`,
    );

    // On a 1280×720 laptop screen the inspector keeps room: two columns side by side, each wide enough, nothing cut off sideways.
    await page.setViewportSize({ width: 1280, height: 720 });
    const layout = await inspector.evaluate((aside) => ({
      width: aside.getBoundingClientRect().width,
      overflows: aside.scrollWidth > aside.clientWidth + 1,
      columns: Array.from(aside.querySelectorAll(".column")).map((c) => Math.round(c.getBoundingClientRect().width)),
      bars: Array.from(aside.querySelectorAll(".bar-row")).filter((row) => row.scrollWidth > row.clientWidth + 1).length,
    }));
    expect(layout.overflows).toBe(false);
    expect(layout.width).toBeGreaterThanOrEqual(780);
    expect(layout.columns).toHaveLength(2);
    for (const width of layout.columns) expect(width).toBeGreaterThanOrEqual(360);
    expect(layout.bars).toBe(0);
    // The chat keeps a readable width beside it, and titles (a conversation named after its tool call) break between words, not inside one.
    expect(await page.locator(".chat").evaluate((chat) => chat.getBoundingClientRect().width)).toBeGreaterThanOrEqual(MIN_CHAT_WIDTH);
    expect(await wordsBrokenAcrossLines(page, ".conversation-title, .chat-title, .call-tab")).toEqual([]);
    await page.setViewportSize({ width: 1600, height: 1000 });
    // Both columns count tokens; a message that only calls a tool has its call counted, not "0 chars".
    const sent = turn1.calls[2].view as { tokens: number; toolCalls?: unknown[] }[];
    expect(await view.locator(".msg-tokens").allTextContents()).toEqual(sent.map((m) => `${format(m.tokens)} tokens`));
    const callOnly = sent.findIndex((m) => m.toolCalls?.length);
    expect(sent[callOnly].tokens).toBeGreaterThan(0);
    expect(await view.locator(".msg").nth(callOnly).locator("code").textContent()).toBe('big_report {"rows":5000}');
    const stored = inspector.locator('.column-state [data-fate="notice"]');
    expect(await stored.locator(".badge-artifact").textContent()).toContain(`artifact ${omitted.handle}`);

    // Keyboard: the call tabs follow the arrow keys.
    await inspector.getByRole("tab", { selected: true }).press("ArrowLeft");
    expect(await inspector.getByRole("tab", { selected: true }).textContent()).toBe("Call 2 → read_tool_output");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("call-tab-1");

    // Turn 2: turn 1 is condensed to its question and answer; its tool exchange stays in state only.
    await page.getByRole("button", { name: "Inspect turn 2: what the model was sent" }).click();
    await expect.poll(() => inspector.getByRole("heading", { level: 2 }).textContent()).toBe("Turn 2: what the model was sent");
    expect(await view.locator(".badge").allTextContents()).toEqual([
      "system prompt (from the policy)",
      "question of turn 1 (Q/A pair)",
      "answer of turn 1 (Q/A pair)",
      "active turn",
    ]);
    expect(await inspector.locator(".column-state .msg").evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.fate))).toEqual([
      "question",
      "exchange",
      "exchange",
      "exchange",
      "exchange",
      "answer",
      "sent",
    ]);
    expect(await inspector.locator('[data-fact="finished-turns"]').textContent()).toBe("Finished turns: 1 in state, 1 condensed into question/answer pairs.");
    expect(await inspector.locator('[data-fact="left-out"]').textContent()).toBe(
      "Left out of the view: 4 stored messages (4 from tool exchanges of finished turns).",
    );

    // Token counts: the bars show the recorded figures against the budget.
    const stats = turn2.calls[0].stats;
    expect(await inspector.locator('[data-bar="state"] .bar-value').textContent()).toBe(format(stats.stateTokens));
    expect(stats.toolSchemaTokens).toBeGreaterThan(0);
    expect(await inspector.locator('[data-bar="view"] .bar-value').textContent()).toBe(
      `${format(stats.viewTokens)} + ${format(stats.toolSchemaTokens)} tool schemas`,
    );
    expect(await inspector.locator('[data-bar="input"] .bar-value').textContent()).toBe(`${format(turn2.calls[0].usage.inputTokens)} (0% from cache)`);
    expect(stats.budget).toBe(VIEW_BUDGET);
    expect(await inspector.locator(".budget figcaption").textContent()).toContain(format(VIEW_BUDGET));
    expect(await inspector.locator('[data-bar="view"] .bar-track').getAttribute("aria-label")).toBe(
      `Model view: ${format(stats.viewTokens)} tokens plus ${format(stats.toolSchemaTokens)} for tool schemas, ` +
        `${Math.round(((stats.viewTokens + stats.toolSchemaTokens) / stats.budget) * 100)}% of the budget`,
    );

    // Cache points: marked on the messages they follow, listed with the call's cached share (the local model caches nothing).
    const points = stats.cachePoints as { after: number; kind: string; ttl: string }[];
    expect(points.length).toBeGreaterThan(0);
    expect(await view.locator(".msg").evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.cachePoint ?? null))).toEqual(
      turn2.calls[0].view.map((_: unknown, i: number) => points.find((p) => p.after === i)?.kind ?? null),
    );
    const cacheFact = await inspector.locator('[data-fact="cache"]').textContent();
    expect(cacheFact).toContain(`${points.length} cache point${points.length === 1 ? "" : "s"}: after message ${points[0].after + 1}`);
    expect(cacheFact).toContain("0% of input read from cache");
    // The estimate reads as a sentence: what was guessed, what the model counted, by how much and which way it was off.
    expect(cacheFact).toContain(`Before sending, the view estimated ${format(stats.estimatedInputTokens)} input tokens (cl100k count × `);
    expect(cacheFact).toMatch(/; the model counted [\d,]+, so the estimate was \d+\.\d% (under|over)\.$/);
    expect(cacheFact).not.toMatch(/-\d+\.\d% off/);
    expect(await inspector.locator('[data-meta="turn"]').textContent()).toContain("0% of input read from cache");

    // Accessibility: every control has a name, and text meets WCAG AA contrast.
    const tree = await page.locator("body").ariaSnapshot();
    expect(tree).not.toMatch(/^\s*- (button|textbox|tab|checkbox|link)\s*(\[[^\]]*\])?:?$/m);
    expect(await lowContrastTexts(page)).toEqual([]);

    await mkdir("test-results", { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
    expect(pageErrors).toEqual([]);
  }, 90_000);

  it("signs in with a pasted token and deletes a conversation everywhere", async () => {
    const bob = await t.token("bob");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByText("Or paste a token from").click();
    await page.getByLabel("Token").fill(bob);
    await page.getByRole("button", { name: "Use this token" }).click();
    await expect.poll(() => page.locator("#session-user").textContent()).toBe("bob");
    expect(await page.locator(".conversation").count()).toBe(0);

    await page.getByRole("button", { name: "New conversation" }).click();
    await page.locator(".conversation").waitFor();
    const { conversations } = (await t.call("GET", "/v1/conversations", { token: bob })).body;
    await page.getByRole("button", { name: "Delete conversation: New conversation" }).click();
    await expect.poll(() => page.locator(".conversation").count()).toBe(0);

    expect((await t.call("GET", `/v1/conversations/${conversations[0].conversationId}`, { token: bob })).status).toBe(404);
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it("edits and resends the last question, regenerates the last answer, and keeps what each replaced, marked", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("User", { exact: true }).fill("carol");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("#session-user").textContent()).toBe("carol");
    await page.getByRole("button", { name: "New conversation" }).click();
    const composer = page.getByLabel("Message");
    for (const [i, question] of ["My name is Ada.", "What is my name?"].entries()) {
      await composer.fill(question);
      await composer.press("Enter");
      await expect.poll(() => page.locator(".chat-message.assistant").count(), TURN_POLL).toBe(i + 1);
    }

    await page.getByRole("button", { name: "Edit your last question" }).click();
    expect(await composer.inputValue()).toBe("What is my name?");
    await composer.fill("What is my name, again?");
    await page.getByRole("button", { name: "Resend", exact: true }).click();
    await expect.poll(() => page.locator(".chat-message").count(), TURN_POLL).toBe(6);
    expect(await page.locator(".chat-message.replaced .chat-text").allTextContents()).toEqual(["What is my name?", expect.any(String)]);
    expect(await page.locator(".chat-message.user:not(.replaced) .chat-text").last().textContent()).toBe("What is my name, again?");

    await page.getByRole("button", { name: "Regenerate the last answer" }).click();
    await expect.poll(() => page.locator(".chat-message").count(), TURN_POLL).toBe(8);
    expect(await page.locator(".chat-message.replaced").count()).toBe(4);
    // The edited question says so; the regenerated one was asked again, unchanged, and says that.
    expect(await page.locator(".chat-message.user.replaced .chat-replaced").allTextContents()).toEqual(["replaced by an edit", "asked again (regenerated)"]);
    expect(await page.getByRole("button", { name: "Edit your last question" }).count()).toBe(1);

    const carol = (await page.evaluate(() => sessionStorage.getItem("threadwise.token"))) as string;
    const { conversationId } = (await t.call("GET", "/v1/conversations", { token: carol })).body.conversations[0];
    const state = (await t.call("GET", `/v1/conversations/${conversationId}/state`, { token: carol })).body.messages;
    expect(state.map((m: { content: string }) => m.content).slice(0, 3)).toEqual(["My name is Ada.", expect.any(String), "What is my name, again?"]);
    expect(state).toHaveLength(4);
    expect(await lowContrastTexts(page)).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it("reuses the empty conversation an example made when New conversation is pressed, leaving no empty entry", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("User", { exact: true }).fill("erin");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("#session-user").textContent()).toBe("erin");
    const newConversation = page.locator("#new-conversation");
    await newConversation.click();
    await page.getByRole("region", { name: "What you can ask" }).getByRole("button", { name: BIG_REPORT_EXAMPLE }).click();
    expect(await page.getByLabel("Message").inputValue()).toBe(BIG_REPORT_EXAMPLE);
    await newConversation.click();
    await newConversation.click();
    expect(await page.getByLabel("Message").inputValue()).toBe("");
    await expect.poll(() => page.locator(".conversation").count()).toBe(1);
    const erin = (await page.evaluate(() => sessionStorage.getItem("threadwise.token"))) as string;
    expect((await t.call("GET", "/v1/conversations", { token: erin })).body.conversations).toHaveLength(1);
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it("links the API reference, which renders every operation without a script or a request elsewhere", async () => {
    const link = page.getByRole("link", { name: "API reference" });
    expect(await link.getAttribute("href")).toBe("/docs");
    const reference = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    const requests: string[] = [];
    const problems: string[] = [];
    reference.on("request", (request) => requests.push(new URL(request.url()).origin));
    reference.on("console", (message) => problems.push(message.text()));
    await reference.goto(`${t.url}/docs`);
    expect(await reference.getByRole("heading", { level: 1 }).textContent()).toMatch(/^Threadwise HTTP API /);
    expect(await reference.locator(".ref-operation").count()).toBeGreaterThan(15);
    expect(new Set(requests)).toEqual(new Set([new URL(t.url).origin]));
    expect(problems).toEqual([]);
    expect(await lowContrastTexts(reference)).toEqual([]);
    await reference.close();
  }, 60_000);

  it("keeps what was typed when a send is refused, and shows a long conversation title whole", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("User", { exact: true }).fill("dave");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("#session-user").textContent()).toBe("dave");
    await page.getByRole("button", { name: "New conversation" }).click();
    const composer = page.getByLabel("Message");

    const tooLong = `${"A question far too long to send. ".repeat(40)}End.`;
    expect(tooLong.length).toBeGreaterThan(MAX_MESSAGE_CHARS);
    await composer.fill(tooLong);
    await composer.press("Enter");
    const refusal = page.getByRole("alert").filter({ hasText: "Not sent" });
    await expect.poll(() => refusal.textContent()).toBe(`Not sent: the question is over ${MAX_MESSAGE_CHARS} characters`);
    await expect.poll(() => composer.inputValue()).toBe(tooLong);
    expect(await page.locator(".chat-message").count()).toBe(0);

    // The title is the question cut at a word within 80 characters: all of it readable in the list and the heading.
    const question = "Which of our regions had the largest drop in gross margin between September and October 2026, and why?";
    await composer.fill(question);
    await composer.press("Enter");
    await expect.poll(() => page.locator(".chat-message.assistant").count(), TURN_POLL).toBe(1);
    expect(await composer.inputValue()).toBe("");
    const title = conversationTitle(question);
    expect(title.endsWith("…")).toBe(true);
    const shown = page.locator(".conversation.current .conversation-title");
    await expect.poll(() => shown.textContent()).toBe(title);
    expect(await shown.getAttribute("title")).toBe(title);
    expect(await page.locator("#chat-title").textContent()).toBe(title);
    for (const element of [shown, page.locator("#chat-title")]) {
      expect(await element.evaluate((e) => e.scrollWidth <= e.clientWidth && e.scrollHeight <= e.clientHeight)).toBe(true);
    }
    expect(await lowContrastTexts(page)).toEqual([]);
    // The browser reports the refused request itself; nothing else may go wrong.
    expect(pageErrors).toEqual([expect.stringContaining("status of 413")]);
  }, 60_000);
});

describeWithBrowser("console approvals", () => {
  let t: TestServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    if (!haveChromium) throw new Error(`${CHROMIUM} is missing: run .ci/install-chromium.sh`);
    // The requester decides: the signed-in user approves, edits or rejects their own calls.
    // Contents stored clear: the raw reads below check what was stored (sealing: test/crypto/contents-at-rest.test.ts).
    t = await startTestServer({ CONTENT_ENCRYPTION: "off", TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always" } }) });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(message.text());
    });
    page.on("pageerror", (error) => pageErrors.push(error.message));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const followUpTitles = async () => (await t.db.collection("follow_ups").find().toArray()).map((f) => f.title);

  it("shows a waiting call with its arguments, refuses invalid edited arguments, runs the edit, rejects another, and names the decider", async () => {
    await page.goto(t.url);
    await page.getByLabel("User", { exact: true }).fill("alice");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "New conversation" }).click();
    const composer = page.getByLabel("Message");
    await composer.fill('create_follow_up {"title": "Call the supplier"}');
    await composer.press("Enter");

    const panel = page.getByRole("region", { name: "Waiting for a decision (1)" });
    await panel.waitFor(TURN_POLL);
    const approval = panel.getByRole("article", { name: "Approval of create_follow_up" });
    const args = approval.getByLabel("Arguments");
    expect(JSON.parse(await args.inputValue())).toEqual({ title: "Call the supplier" });
    expect(await followUpTitles()).toEqual([]);

    // Refused by the tool's schema (a title of at least 3 characters): the error shows, nothing changes.
    await args.fill('{"title": "x"}');
    await approval.getByRole("button", { name: "Run with these arguments" }).click();
    // The refusal gives the API's reason: which argument, and why.
    await expect.poll(() => approval.getByRole("alert").textContent()).toMatch(/^the edited arguments are not valid for create_follow_up: args\.title: .+/);
    await args.fill('{"title": "Call the supplier today"}');
    await approval.getByRole("button", { name: "Run with these arguments" }).click();
    await expect.poll(() => page.locator(".chat-message.assistant").count(), TURN_POLL).toBe(1);
    await expect.poll(() => page.locator("#approvals").isHidden()).toBe(true);
    expect(await followUpTitles()).toEqual(["Call the supplier today"]);
    // The progress line of the resumed turn ends with it.
    await expect.poll(() => page.getByRole("status").textContent()).toBe("");
    expect(await page.getByRole("status").getAttribute("data-step")).toBeNull();

    await composer.fill('create_follow_up {"title": "Order more paper"}');
    await composer.press("Enter");
    await panel.waitFor(TURN_POLL);
    await approval.getByLabel("Reason, if you reject (the model reads it)").fill("we have enough");
    await approval.getByRole("button", { name: "Reject" }).click();
    await expect.poll(() => page.locator(".chat-message.assistant").count(), TURN_POLL).toBe(2);
    expect(await followUpTitles()).toEqual(["Call the supplier today"]);

    await page.getByRole("button", { name: "Inspect turn 1: what the model was sent" }).click();
    const facts = page.getByRole("complementary").getByRole("region", { name: "Approvals of this turn" });
    await expect.poll(() => facts.textContent()).toContain('create_follow_up {"title":"Call the supplier"}: edited by alice at');
    expect(await facts.textContent()).toContain('ran with {"title":"Call the supplier today"}');
    await page.getByRole("button", { name: "Inspect turn 2: what the model was sent" }).click();
    await expect.poll(() => facts.textContent()).toContain("rejected by alice");
    expect(await facts.textContent()).toContain("not run (we have enough)");
    expect(await lowContrastTexts(page)).toEqual([]);
    // The browser reports the refused edit's 400; nothing else went wrong.
    expect(pageErrors).toEqual([expect.stringContaining("status of 400")]);
  }, 90_000);
});
