import type { WebClient } from "@slack/web-api";
import type { TurnEvent } from "../../events/turn-event-types.js";
import { SerialCalls } from "../serial-calls.js";
import { turnFailureMessage } from "../failure-message.js";
import type { TurnAnswerStream, SlackReplyTarget } from "../../queue/turn-job.js";

/** Slack's limit on `markdown_text` in one streaming call. */
export const SLACK_STREAM_MAX_CHARS = 12_000;

/** What the stream needs of the replier: its client, its error mapping and its one-message fallback. */
export interface SlackStreamDeps {
  client: WebClient;
  call<T>(request: () => Promise<T>): Promise<T>;
  reply(target: SlackReplyTarget, text: string): Promise<unknown>;
  replyFailure(target: SlackReplyTarget, error: unknown): Promise<unknown>;
  /** True once per turn: only the attempt that gets it streams (`TurnStore.claimStream`). */
  claimStream(): Promise<boolean>;
}

/** Slack DM channel ids begin with D; elsewhere a stream names its recipient. */
function isDirectMessage(channelId: string): boolean {
  return channelId.startsWith("D");
}

/**
 * A turn's answer streamed into its Slack thread: `chat.startStream` at the first text,
 * `chat.appendStream` with whatever text arrived meanwhile (one call in flight at a time, so the
 * rate follows Slack's answers), `chat.stopStream` at the end; progress as
 * `assistant.threads.setStatus`. Where Slack refuses to stream (or another attempt already
 * streamed this turn), the answer goes as one message at the end.
 */
export class SlackAnswerStream implements TurnAnswerStream {
  readonly #calls = new SerialCalls();
  #pending = "";
  #flushQueued = false;
  #ts: string | undefined;
  #state: "idle" | "streaming" | "unstreamed" | "broken" = "idle";
  #wrote = false;
  #newCall = false;

  constructor(
    private readonly deps: SlackStreamDeps,
    private readonly target: SlackReplyTarget,
    /** The Slack user who asked: the stream's recipient outside DMs. */
    private readonly recipientUserId: string,
  ) {}

  onEvent(event: TurnEvent): void {
    if (event.type === "progress") {
      this.#newCall = this.#wrote;
      if (!this.#wrote) this.setStatus("is thinking…");
    } else if (event.type === "tool_started") {
      this.setStatus(`is running ${event.tool}…`);
    } else if (event.type === "text") {
      // The text of a later model call is a new paragraph after the earlier call's.
      this.#pending += (this.#newCall ? "\n\n" : "") + event.delta;
      this.#newCall = false;
      this.#wrote = true;
      if (!this.#flushQueued) {
        this.#flushQueued = true;
        this.#calls.add(() => this.flush());
      }
    }
  }

  async finish(answer: string): Promise<void> {
    await this.#calls.settled();
    if (this.#state === "streaming") return this.stop(this.#pending);
    if (this.#state === "broken") await this.stop("").catch(() => undefined);
    await this.deps.reply(this.target, answer);
  }

  async fail(error: unknown): Promise<void> {
    await this.#calls.settled();
    if (this.#state !== "streaming") {
      await this.deps.replyFailure(this.target, error);
      return;
    }
    await this.stop(`\n\n${turnFailureMessage(error, "slack")}`);
  }

  async abandon(): Promise<void> {
    await this.#calls.settled();
    if (this.#state === "streaming" || this.#state === "broken") await this.stop("").catch(() => undefined);
  }

  /** Progress only: a status Slack refuses (no `assistant:write`, not an assistant thread) changes nothing else. */
  private setStatus(status: string): void {
    if (this.#state !== "idle") return;
    const { channelId, threadTs } = this.target;
    this.#calls.add(() =>
      this.deps
        .call(() => this.deps.client.assistant.threads.setStatus({ channel_id: channelId, thread_ts: threadTs, status }))
        .then(
          () => undefined,
          () => undefined,
        ),
    );
  }

  private async flush(): Promise<void> {
    this.#flushQueued = false;
    if (this.#state === "unstreamed" || this.#state === "broken") return;
    const text = this.#pending.slice(0, SLACK_STREAM_MAX_CHARS);
    this.#pending = this.#pending.slice(text.length);
    const { channelId, threadTs, teamId } = this.target;
    try {
      if (this.#state === "idle") {
        if (!(await this.deps.claimStream())) {
          this.#state = "unstreamed";
          return;
        }
        const recipient = isDirectMessage(channelId) ? {} : { recipient_team_id: teamId, recipient_user_id: this.recipientUserId };
        const started = await this.deps.call(() =>
          this.deps.client.chat.startStream({ channel: channelId, thread_ts: threadTs, markdown_text: text, ...recipient }),
        );
        this.#ts = started.ts;
        this.#state = "streaming";
      } else {
        await this.deps.call(() => this.deps.client.chat.appendStream({ channel: channelId, ts: this.#ts!, markdown_text: text }));
      }
    } catch {
      // Streaming refused here (a channel type, a missing scope) or lost: the answer goes whole at the end.
      this.#state = this.#state === "idle" ? "unstreamed" : "broken";
      return;
    }
    if (this.#pending.length > 0 && !this.#flushQueued) {
      this.#flushQueued = true;
      this.#calls.add(() => this.flush());
    }
  }

  private async stop(markdownText: string): Promise<void> {
    const { channelId } = this.target;
    const text = markdownText.length > 0 ? { markdown_text: markdownText.slice(0, SLACK_STREAM_MAX_CHARS) } : {};
    await this.deps.call(() => this.deps.client.chat.stopStream({ channel: channelId, ts: this.#ts!, ...text }));
  }
}
