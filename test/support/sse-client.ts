/** One server-sent event as a client parses it. */
export interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

export interface SseStream {
  status: number;
  headers: Headers;
  /** The next event; undefined once the stream ended. */
  next(): Promise<SseEvent | undefined>;
  /** Every event until the stream ends. */
  rest(): Promise<SseEvent[]>;
  /** Goes away mid-stream, as a client that closes the connection. */
  close(): void;
}

/** Parses `text/event-stream` as the WHATWG spec reads it (fields per line, events split by a blank line). */
function parseEvent(block: string): SseEvent | undefined {
  const event: SseEvent = { event: "message", data: undefined };
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") event.id = value;
    else if (field === "event") event.event = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return undefined;
  event.data = JSON.parse(data.join("\n"));
  return event;
}

/** Every complete event of an event stream's text (a whole body, or what arrived of it: a block not yet ended is left out). */
export function parseEvents(text: string): SseEvent[] {
  const blocks = text.split("\n\n");
  blocks.pop();
  return blocks.flatMap((block) => parseEvent(block) ?? []);
}

/** Opens a request whose answer is an event stream, and reads it event by event. */
export async function openEventStream(url: string, init: RequestInit): Promise<SseStream> {
  const gone = new AbortController();
  const res = await fetch(url, { ...init, signal: gone.signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const next = async (): Promise<SseEvent | undefined> => {
    for (;;) {
      const end = buffered.indexOf("\n\n");
      if (end >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const event = parseEvent(block);
        if (event) return event;
        continue;
      }
      const { value, done } = await reader.read();
      if (done) return undefined;
      buffered += value;
    }
  };
  return {
    status: res.status,
    headers: res.headers,
    next,
    async rest() {
      const events: SseEvent[] = [];
      for (let event = await next(); event; event = await next()) events.push(event);
      return events;
    },
    close: () => gone.abort(),
  };
}
