import type { Context, StreamifyHandler } from "aws-lambda";
import { pipeResponseStream, type HttpResponse } from "../../lib/api/http.js";

/**
 * Lambda's response stream, as the Node.js runtime hands it to a handler wrapped in
 * `awslambda.streamifyResponse` (the runtime's global, typed by @types/aws-lambda; only this
 * module and functions/stream.ts name it).
 */
export type ResponseStream = awslambda.HttpResponseStream;

/** A handler that writes its response on the stream rather than returning it. */
export type StreamingHandler<TEvent> = (event: TEvent, responseStream: ResponseStream, context: Context) => Promise<void>;

/** Marks the handler as streaming for the runtime (`invokeMode: RESPONSE_STREAM` on its Function URL). */
export function streamifyResponse<TEvent>(handler: StreamingHandler<TEvent>): StreamifyHandler<TEvent, void> {
  return awslambda.streamifyResponse(handler);
}

/**
 * Writes a response through a Function URL: status and headers first (the runtime's HTTP
 * integration prelude), then the body, a streamed one piece by piece as it comes. The body is
 * always written, even empty: the prelude goes out with the first write, and a stream ended
 * without one leaves the client waiting. A client that goes away stops only the writing.
 */
export async function writeResponseStream(responseStream: ResponseStream, response: HttpResponse): Promise<void> {
  const stream = awslambda.HttpResponseStream.from(responseStream, { statusCode: response.status, headers: response.headers });
  const gone = new AbortController();
  const abort = () => gone.abort();
  stream.on("error", abort);
  stream.on("close", abort);
  if (!response.stream) {
    stream.write(response.body);
  } else {
    stream.write("");
    await pipeResponseStream(stream, response.stream, gone.signal);
  }
  if (!gone.signal.aborted) await new Promise<void>((resolve) => stream.end(resolve));
}
