// The runtime side of a Lambda container, run by Node 22 in each function's process: it imports
// the handler as the Node.js runtime does (LAMBDA_TASK_ROOT, _HANDLER) and serves invocations
// through the Lambda Runtime API (AWS_LAMBDA_RUNTIME_API), which test/artifact/support/lambda-runtime.ts
// answers. Between invocations the process waits on /next, where Lambda would freeze it.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const env = process.env;
const api = `http://${env.AWS_LAMBDA_RUNTIME_API}/2018-06-01/runtime`;
const [moduleName, exportName] = env._HANDLER.split(".");

const errorBody = (error) =>
  JSON.stringify({ errorType: error?.name ?? "Error", errorMessage: error?.message ?? String(error), stackTrace: String(error?.stack ?? "").split("\n") });
const post = (url, body) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });

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
  try {
    const result = await handler(event, context);
    await post(`${api}/invocation/${requestId}/response`, JSON.stringify(result ?? null));
  } catch (error) {
    await post(`${api}/invocation/${requestId}/error`, errorBody(error));
  }
}
