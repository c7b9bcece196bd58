import { Writable } from "node:stream";
import type { Context, StreamifyHandler } from "aws-lambda";

// Ported from aws/aws-lambda-nodejs-runtime-interface-client (src/UserFunction.js,
// src/HttpResponseStream.js, src/ResponseStream.js), as test/artifact/support/runtime-client.mjs
// does for the bundles: what a handler wrapped in `awslambda.streamifyResponse` meets in the Node.js runtime.
const HANDLER_STREAMING = Symbol.for("aws.lambda.runtime.handler.streaming");
const STREAM_RESPONSE = "response";
const HTTP_INTEGRATION_RESPONSE = "application/vnd.awslambda.http-integration-response";
/** The prelude ends with 8 NUL bytes; JSON never holds one. */
const PRELUDE_DELIMITER = Buffer.alloc(8);

type FirstWriteHook = (write: (chunk: string | Uint8Array) => void) => void;

/**
 * The runtime's `awslambda` global, which functions/shared/response-stream.ts calls: `streamifyResponse`
 * marks the handler as streaming, `HttpResponseStream.from` sets the HTTP integration content type and
 * writes the status and headers (JSON, then the delimiter) just before the first write.
 */
export function installAwsLambdaGlobal(): void {
  (globalThis as { awslambda?: unknown }).awslambda = {
    streamifyResponse: <H extends object>(handler: H) => Object.assign(handler, { [HANDLER_STREAMING]: STREAM_RESPONSE }),
    HttpResponseStream: {
      from(underlying: RecordedResponseStream, prelude: Record<string, unknown>) {
        underlying.setContentType(HTTP_INTEGRATION_RESPONSE);
        const metadata = JSON.stringify(prelude);
        underlying._onBeforeFirstWrite = (write) => {
          write(metadata);
          write(new Uint8Array(PRELUDE_DELIMITER.length));
        };
        return underlying;
      },
    },
  };
}

/** What the client of a Function URL has received so far: the prelude's status and headers, and the body after it. */
export interface ReceivedResponse {
  statusCode?: number;
  headers: Record<string, string>;
  body: string;
}

/** The response stream the runtime hands the handler, keeping every byte written, in order, as the Function URL would send it. */
export class RecordedResponseStream extends Writable {
  contentType = "application/octet-stream";
  _onBeforeFirstWrite?: FirstWriteHook;
  private written = false;
  private readonly chunks: Buffer[] = [];

  setContentType(contentType: string): void {
    if (this.written) throw new Error("Cannot set content-type, too late.");
    this.contentType = contentType;
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    if (!this.written && this._onBeforeFirstWrite) this._onBeforeFirstWrite((first) => super.write(first));
    this.written = true;
    return super.write(chunk, encoding as BufferEncoding, callback as (error: Error | null | undefined) => void);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks.push(chunk);
    callback();
    this.emit("received");
  }

  /** The response as received so far; without the HTTP integration content type, all of it is body. */
  received(): ReceivedResponse {
    const all = Buffer.concat(this.chunks);
    if (this.contentType !== HTTP_INTEGRATION_RESPONSE) return { headers: {}, body: all.toString("utf8") };
    const end = all.indexOf(PRELUDE_DELIMITER);
    if (end < 0) return { headers: {}, body: "" };
    const prelude = JSON.parse(all.subarray(0, end).toString("utf8")) as { statusCode?: number; headers?: Record<string, string> };
    return { statusCode: prelude.statusCode, headers: prelude.headers ?? {}, body: all.subarray(end + PRELUDE_DELIMITER.length).toString("utf8") };
  }

  /** Resolves once what was received satisfies `test`, checked at each write. */
  until(test: (response: ReceivedResponse) => boolean): Promise<ReceivedResponse> {
    return new Promise((resolve) => {
      const check = () => {
        const response = this.received();
        if (!test(response)) return false;
        this.off("received", check);
        resolve(response);
        return true;
      };
      if (!check()) this.on("received", check);
    });
  }
}

/**
 * One invocation as the runtime runs a streaming handler: refused unless it was wrapped in
 * `streamifyResponse`; `finished` settles when the handler has, and rejects if it left the stream unended.
 */
export function invokeStreaming<E>(
  handler: StreamifyHandler<E, void>,
  event: E,
  context: Context,
): { stream: RecordedResponseStream; finished: Promise<ReceivedResponse> } {
  if ((handler as unknown as Record<symbol, unknown>)[HANDLER_STREAMING] !== STREAM_RESPONSE)
    throw new Error("the handler is not wrapped in streamifyResponse");
  const stream = new RecordedResponseStream();
  const finished = (async () => {
    await handler(event, stream as unknown as awslambda.HttpResponseStream, context);
    if (!stream.writableFinished) throw new Error("Response stream is not finished.");
    return stream.received();
  })();
  return { stream, finished };
}
