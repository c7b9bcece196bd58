import type { TurnEvent } from "../../events/turn-event-types.js";
import { SerialCalls } from "../serial-calls.js";
import { turnFailureMessage } from "../failure-message.js";
import type { TurnAnswerStream, TeamsReplyTarget } from "../../queue/turn-job.js";

/** Teams stops taking updates to a stream about two minutes after it began; past this, the answer goes as a new message. */
export const DEFAULT_TEAMS_STREAM_LIMIT_MS = 110_000;
/** Teams takes about one streaming update a second; updates are coalesced to this pace. */
export const DEFAULT_TEAMS_STREAM_INTERVAL_MS = 1_000;

/** What the stream needs of the replier: posting an activity (its id back), and the one-message replies. */
export interface TeamsStreamDeps {
  post(target: TeamsReplyTarget, activity: Record<string, unknown>): Promise<string>;
  reply(target: TeamsReplyTarget, text: string): Promise<unknown>;
  replyFailure(target: TeamsReplyTarget, error: unknown): Promise<unknown>;
  claimStream(): Promise<boolean>;
  /** Default: {@link DEFAULT_TEAMS_STREAM_LIMIT_MS}. */
  limitMs?: number;
  /** Default: {@link DEFAULT_TEAMS_STREAM_INTERVAL_MS}. */
  intervalMs?: number;
  /** Default: `Date.now`. */
  now?: () => number;
}

/**
 * A turn's answer streamed into a Teams 1:1 chat, as Teams' bot streaming defines it: `typing`
 * activities carrying a `streaminfo` entity, first informative updates ("Running a tool…"), then
 * the text so far (`streaming`, each update holding all text before it), and a `message` with
 * the whole answer (`final`) that closes the stream. The first update's id names the stream.
 * Where an update is refused, or past the two-minute limit, the answer goes as one message.
 */
export class TeamsAnswerStream implements TurnAnswerStream {
  readonly #calls = new SerialCalls();
  #text = "";
  #sent = 0;
  #sequence = 0;
  #streamId: string | undefined;
  #startedAt = 0;
  #lastAt = 0;
  #state: "idle" | "streaming" | "unstreamed" = "idle";
  #queued = false;
  #newCall = false;

  constructor(
    private readonly deps: TeamsStreamDeps,
    private readonly target: TeamsReplyTarget,
  ) {}

  onEvent(event: TurnEvent): void {
    if (event.type === "progress" && this.#text === "") this.update({ informative: "Thinking…" });
    else if (event.type === "progress") this.#newCall = true;
    else if (event.type === "tool_started" && this.#text === "") this.update({ informative: `Running ${event.tool}…` });
    else if (event.type === "text") {
      this.#text += (this.#newCall ? "\n\n" : "") + event.delta;
      this.#newCall = false;
      if (!this.#queued) {
        this.#queued = true;
        this.#calls.add(() => this.sendText());
      }
    }
  }

  async finish(answer: string): Promise<void> {
    await this.#calls.settled();
    if (this.#state === "streaming" && !this.expired()) {
      const closed = await this.send("message", answer, { streamType: "final" }).then(
        () => true,
        () => false,
      );
      if (closed) return;
    }
    await this.deps.reply(this.target, answer);
  }

  async fail(error: unknown): Promise<void> {
    await this.#calls.settled();
    if (this.#state === "streaming" && !this.expired()) {
      const closed = await this.send("message", turnFailureMessage(error, "teams"), { streamType: "final" }).then(
        () => true,
        () => false,
      );
      if (closed) return;
    }
    await this.deps.replyFailure(this.target, error);
  }

  /** Teams ends a stream left open by itself; a retry answers in a new message. */
  async abandon(): Promise<void> {
    await this.#calls.settled();
  }

  private expired(): boolean {
    return this.now() - this.#startedAt > (this.deps.limitMs ?? DEFAULT_TEAMS_STREAM_LIMIT_MS);
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  private update(update: { informative: string }): void {
    this.#calls.add(() => this.sendTyping(update.informative, "informative"));
  }

  private async sendText(): Promise<void> {
    this.#queued = false;
    if (this.#text.length === this.#sent) return;
    await this.sendTyping(this.#text, "streaming");
    this.#sent = this.#text.length;
  }

  /** One update, at Teams' pace; the first one claims the turn's stream and its id names it. */
  private async sendTyping(text: string, streamType: "informative" | "streaming"): Promise<void> {
    if (this.#state === "unstreamed") return;
    if (this.#state === "idle") {
      if (!(await this.deps.claimStream())) {
        this.#state = "unstreamed";
        return;
      }
      this.#startedAt = this.now();
    } else if (this.expired()) {
      this.#state = "unstreamed";
      return;
    }
    const wait = this.#lastAt + (this.deps.intervalMs ?? DEFAULT_TEAMS_STREAM_INTERVAL_MS) - this.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    try {
      await this.send("typing", text, { streamType, streamSequence: ++this.#sequence });
      this.#state = "streaming";
    } catch {
      // Refused (streaming not allowed here, or the stream timed out): the answer goes whole at the end.
      this.#state = "unstreamed";
    }
    this.#lastAt = this.now();
  }

  private async send(type: "typing" | "message", text: string, info: { streamType: string; streamSequence?: number }): Promise<void> {
    const entity = { type: "streaminfo", ...(this.#streamId ? { streamId: this.#streamId } : {}), ...info };
    const id = await this.deps.post(this.target, { type, text, ...(type === "message" ? { textFormat: "markdown" } : {}), entities: [entity] });
    this.#streamId ??= id;
  }
}
