// The runtime side of a Lambda container, run by Node 22 in each function's process: it imports
// the handler as the Node.js runtime does (LAMBDA_TASK_ROOT, _HANDLER) and serves invocations
// through the Lambda Runtime API (AWS_LAMBDA_RUNTIME_API), which test/artifact/support/lambda-runtime.ts
// answers. Between invocations the process waits on /next, where Lambda would freeze it.
//
// A handler wrapped in `awslambda.streamifyResponse` streams its response as the Node.js runtime
// does: the `awslambda` global (streamifyResponse, HttpResponseStream) and the response stream are
// ported from aws/aws-lambda-nodejs-runtime-interface-client (src/UserFunction.js,
// src/HttpResponseStream.js, src/ResponseStream.js, src/Runtime.js): one chunked POST to
// /response with `Lambda-Runtime-Function-Response-Mode: streaming`, the HTTP integration prelude
// (JSON, then 8 NUL bytes) before the first write, and an error as trailers.
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const env = process.env;
const api = `http://${env.AWS_LAMBDA_RUNTIME_API}/2018-06-01/runtime`;
const [moduleName, exportName] = env._HANDLER.split(".");

const errorBody = (error) =>
  JSON.stringify({ errorType: error?.name ?? "Error", errorMessage: error?.message ?? String(error), stackTrace: String(error?.stack ?? "").split("\n") });
const post = (url, body) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });

const HANDLER_STREAMING = Symbol.for("aws.lambda.runtime.handler.streaming");
const HANDLER_HIGHWATERMARK = Symbol.for("aws.lambda.runtime.handler.streaming.highWaterMark");
const STREAM_RESPONSE = "response";
const METADATA_PRELUDE_CONTENT_TYPE = "application/vnd.awslambda.http-integration-response";
const DELIMITER_LEN = 8;

// The runtime's is a class with this one static method.
const HttpResponseStream = {
  from(underlyingStream, prelude) {
    underlyingStream.setContentType(METADATA_PRELUDE_CONTENT_TYPE);
    const metadataPrelude = JSON.stringify(prelude);
    underlyingStream._onBeforeFirstWrite = (write) => {
      write(metadataPrelude);
      write(new Uint8Array(DELIMITER_LEN));
    };
    return underlyingStream;
  },
};

globalThis.awslambda = {
  streamifyResponse: (handler, options) => {
    handler[HANDLER_STREAMING] = STREAM_RESPONSE;
    if (typeof options?.highWaterMark === "number") handler[HANDLER_HIGHWATERMARK] = Number.parseInt(options.highWaterMark, 10);
    return handler;
  },
  HttpResponseStream,
};

/** What the runtime lets a handler do with the stream: Writable's and EventEmitter's methods, setContentType, a few properties. */
function writableStreamOnly(inner) {
  const fns = ["cork", "destroy", "end", "uncork", "write", "addListener", "emit", "eventNames", "getMaxListeners", "listenerCount", "listeners", "off", "on"];
  fns.push("once", "prependListener", "prependOnceListener", "rawListeners", "removeAllListeners", "removeListener", "setMaxListeners", "setContentType");
  const stream = Object.fromEntries(fns.map((fn) => [fn, inner[fn].bind(inner)]));
  for (const prop of ["destroyed", "writable", "_onBeforeFirstWrite"]) {
    Object.defineProperty(stream, prop, { get: () => inner[prop], set: (value) => (inner[prop] = value) });
  }
  const readOnly = ["writableFinished", "writableObjectMode", "writableBuffer", "writableEnded", "writableNeedDrain", "writableHighWaterMark"];
  for (const prop of [...readOnly, "writableCorked", "writableLength"]) Object.defineProperty(stream, prop, { get: () => inner[prop] });
  return stream;
}

/** The invocation's response as one chunked POST, opened by the first write; `responseDone` settles when the Runtime API answers it. */
function createResponseStream(requestId) {
  const [hostname, port] = env.AWS_LAMBDA_RUNTIME_API.split(":");
  let status = "ready";
  const req = httpRequest({
    hostname,
    port,
    method: "POST",
    path: `/2018-06-01/runtime/invocation/${encodeURIComponent(requestId)}/response`,
    headers: {
      "Lambda-Runtime-Function-Response-Mode": "streaming",
      Trailer: ["Lambda-Runtime-Function-Error-Type", "Lambda-Runtime-Function-Error-Body"],
      "Content-Type": "application/octet-stream",
    },
  });
  const responseDone = new Promise((resolve, reject) => {
    req.on("response", (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", (error) => {
      reject(error);
      req.destroy(error);
    });
  });
  req.setContentType = (contentType) => {
    if (status !== "ready") throw new Error("Cannot set content-type, too late.");
    req.setHeader("Content-Type", contentType);
  };
  const origWrite = req.write.bind(req);
  req.write = function (chunk, encoding, callback) {
    const body = typeof chunk !== "string" && !Buffer.isBuffer(chunk) && chunk?.constructor !== Uint8Array ? JSON.stringify(chunk) : chunk;
    if (status === "ready" && typeof this._onBeforeFirstWrite === "function") this._onBeforeFirstWrite((ch) => origWrite(ch));
    const ret = origWrite(body, encoding, callback);
    if (status === "ready") status = "write_called";
    return ret;
  };
  const fail = (error) => {
    const body = errorBody(error);
    req.addTrailers({
      "Lambda-Runtime-Function-Error-Type": JSON.parse(body).errorType,
      "Lambda-Runtime-Function-Error-Body": Buffer.from(body).toString("base64"),
    });
    req.end();
  };
  return { responseStream: writableStreamOnly(req), responseDone, fail };
}

let handler;
try {
  handler = (await import(pathToFileURL(join(env.LAMBDA_TASK_ROOT, `${moduleName}.mjs`)).href))[exportName];
  if (typeof handler !== "function") throw new Error(`${env._HANDLER} is not a function`);
} catch (error) {
  await post(`${api}/init/error`, errorBody(error));
  process.exit(1);
}

for (;;) {
  const next = await fetch(`${api}/invocation/next`);
  const requestId = next.headers.get("lambda-runtime-aws-request-id");
  const deadline = Number(next.headers.get("lambda-runtime-deadline-ms"));
  const event = await next.json();
  // The Node.js runtime sets the invocation's X-Ray trace header here, where the X-Ray SDK and Powertools read it.
  process.env._X_AMZN_TRACE_ID = next.headers.get("lambda-runtime-trace-id") ?? "";
  const context = {
    awsRequestId: requestId,
    invokedFunctionArn: next.headers.get("lambda-runtime-invoked-function-arn"),
    functionName: env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION,
    memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  if (handler[HANDLER_STREAMING] === STREAM_RESPONSE) {
    const { responseStream, responseDone, fail } = createResponseStream(requestId);
    try {
      const result = handler(event, responseStream, context);
      if (typeof result?.then !== "function") {
        fail(new Error("Streaming does not support non-async handlers."));
        continue;
      }
      await result;
      await responseDone;
      if (!responseStream.writableFinished) fail(new Error("Response stream is not finished."));
    } catch (error) {
      fail(error);
    }
    continue;
  }
  try {
    const result = await handler(event, context);
    await post(`${api}/invocation/${requestId}/response`, JSON.stringify(result ?? null));
  } catch (error) {
    await post(`${api}/invocation/${requestId}/error`, errorBody(error));
  }
}
