import { ChatBedrockConverse } from "@langchain/aws";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { checkModelCredentials, createChatModel, createModelTokenCounter, incompleteAnswerError, modelCallError } from "../../lib/agent/chat-model.js";
import { LocalChatModel } from "../../lib/agent/local-chat-model.js";
import type { ModelConfig } from "../../lib/config/model-config.js";
import { ModelBusyError, ModelCallFailedError, ModelCallLimitError, ModelCredentialsError } from "../../lib/errors.js";
import { startConverseEndpoint, type ConverseEndpoint, type ScriptedReply } from "../support/converse-endpoint.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
const bedrock: ModelConfig = { provider: "bedrock", bedrockModelId: MODEL_ID, region: "us-east-1", maxOutputTokens: 256, prices: {}, countTokens: false };
let endpoint: ConverseEndpoint;

beforeAll(async () => {
  endpoint = await startConverseEndpoint();
});
afterAll(() => endpoint.close());

/** Points the AWS SDK at the local endpoint with its dummy credentials, for the body of `run`. */
async function withEndpoint<T>(run: () => Promise<T>): Promise<T> {
  for (const [name, value] of Object.entries(endpoint.environment)) vi.stubEnv(name, value);
  try {
    return await run();
  } finally {
    vi.unstubAllEnvs();
  }
}

describe("chat model", () => {
  describe("createChatModel", () => {
    it("returns the offline model for the local provider", () => {
      expect(createChatModel({ ...bedrock, provider: "local" })).toBeInstanceOf(LocalChatModel);
    });

    it("returns a Converse model with the configured model, region and output limit, at temperature 0", async () => {
      const model = createChatModel(bedrock);
      expect(model).toBeInstanceOf(ChatBedrockConverse);
      await withEndpoint(() => model.invoke([new HumanMessage("Hello?")]));
      expect(endpoint.requests.at(-1)).toMatchObject({
        modelId: MODEL_ID,
        operation: "converse",
        body: { inferenceConfig: { maxTokens: 256, temperature: 0 } },
      });
    });
  });

  describe("createChatModel with a Bedrock API key", () => {
    it("returns a Converse model that sends the key as a bearer token instead of signing with AWS credentials", async () => {
      const model = createChatModel({ ...bedrock, bedrockBearerToken: "bedrock-api-key-local" });
      await withEndpoint(() => model.invoke([new HumanMessage("Hello?")]));
      expect(endpoint.requests.at(-1)?.headers.authorization).toBe("Bearer bedrock-api-key-local");
    });
  });

  describe("checkModelCredentials with a Bedrock API key", () => {
    it("returns without AWS credentials when AWS_BEARER_TOKEN_BEDROCK is set", async () => {
      vi.stubEnv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials");
      vi.stubEnv("AWS_CONFIG_FILE", "/nonexistent/config");
      vi.stubEnv("AWS_ACCESS_KEY_ID", "");
      vi.stubEnv("AWS_EC2_METADATA_DISABLED", "true");
      try {
        await expect(checkModelCredentials({ ...bedrock, bedrockBearerToken: "k" })).resolves.toBeUndefined();
      } finally {
        vi.unstubAllEnvs();
      }
    });
  });

  describe("createModelTokenCounter", () => {
    it("returns a counter through the Converse model's own client, and none for the offline model", async () => {
      const model = await withEndpoint(async () => createChatModel(bedrock));
      const count = createModelTokenCounter(model, MODEL_ID);
      expect(await withEndpoint(() => count!([new HumanMessage("How many tokens is this?")], []))).toBeGreaterThan(0);
      expect(endpoint.requests.at(-1)?.operation).toBe("count-tokens");
      expect(createModelTokenCounter(new LocalChatModel(), MODEL_ID)).toBeUndefined();
    });
  });

  describe("checkModelCredentials", () => {
    it("returns without looking for credentials for the local provider", async () => {
      await expect(checkModelCredentials({ ...bedrock, provider: "local" })).resolves.toBeUndefined();
    });

    it("returns when the default chain finds credentials", async () => {
      await expect(withEndpoint(() => checkModelCredentials(bedrock))).resolves.toBeUndefined();
    });

    it("throws ModelCredentialsError saying what to set when the default chain finds none", async () => {
      const none = { AWS_ACCESS_KEY_ID: "", AWS_SECRET_ACCESS_KEY: "", AWS_SESSION_TOKEN: "", AWS_PROFILE: "threadwise-test-none" };
      const files = { AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/credentials", AWS_CONFIG_FILE: "/nonexistent/config", AWS_EC2_METADATA_DISABLED: "true" };
      for (const [name, value] of Object.entries({ ...none, ...files })) vi.stubEnv(name, value);
      vi.stubEnv("AWS_CONTAINER_CREDENTIALS_FULL_URI", undefined);
      vi.stubEnv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", undefined);
      vi.stubEnv("AWS_WEB_IDENTITY_TOKEN_FILE", undefined);
      try {
        const error = await checkModelCredentials(bedrock).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ModelCredentialsError);
        expect((error as Error).message).toMatch(/^MODEL_PROVIDER=bedrock needs AWS credentials .*AWS_PROFILE.*MODEL_PROVIDER=local/);
        expect((error as Error).cause).toBeDefined();
      } finally {
        vi.unstubAllEnvs();
      }
    });
  });

  describe("modelCallError", () => {
    it("returns a ModelCredentialsError, with the SDK error as cause, for each credential failure", () => {
      for (const name of ["CredentialsProviderError", "AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"]) {
        const sdkError = Object.assign(new Error("refused"), { name });
        const mapped = modelCallError(sdkError);
        expect(mapped).toBeInstanceOf(ModelCredentialsError);
        expect(mapped).toMatchObject({ cause: sdkError, message: expect.stringContaining(`(${name})`) });
      }
    });

    it("returns any other error, and a non-error, as it is", () => {
      const ours = new ModelCallLimitError("the turn reached its limit", 3);
      expect(modelCallError(ours)).toBe(ours);
      const aborted = Object.assign(new Error("aborted"), { name: "AbortError" });
      expect(modelCallError(aborted)).toBe(aborted);
      expect(modelCallError("text")).toBe("text");
    });

    /** Calls the real Converse model against the endpoint answering `reply`, and returns what `modelCallError` makes of its failure. */
    async function failedCall(reply: ScriptedReply, stream = false): Promise<unknown> {
      endpoint.setResponder(() => reply);
      const model = createChatModel(bedrock) as ChatBedrockConverse;
      // One attempt: the SDK's own retries only add seconds here; the worker's retry is tested with the worker.
      model.client.config.maxAttempts = async () => 1;
      try {
        const call = stream ? collect(model.stream([new HumanMessage("Hello?")])) : model.invoke([new HumanMessage("Hello?")]);
        return await withEndpoint(() => call.then(() => expect.unreachable("the call succeeded")).catch((error: unknown) => modelCallError(error)));
      } finally {
        endpoint.setResponder(() => ({ text: "Hello." }));
      }
    }

    async function collect(chunks: Promise<AsyncIterable<unknown>>): Promise<void> {
      for await (const _ of await chunks);
    }

    it.each([
      [429, "ThrottlingException", "Too many requests, please wait before trying again."],
      [503, "ServiceUnavailableException", "The service is unavailable. Please try again later."],
      [429, "ModelNotReadyException", "The model is not ready to serve inference requests."],
    ])("returns a ModelBusyError (model_busy, Retry-After) for Bedrock's %i %s through ChatBedrockConverse", async (status, type, message) => {
      const error = await failedCall({ error: { status, type, message } });
      expect(error).toBeInstanceOf(ModelBusyError);
      expect(error).toMatchObject({ code: "model_busy", reason: `${type} (HTTP ${status})`, retryAfterSeconds: 10, cause: { name: type } });
      expect((error as Error).message).not.toContain(message);
    });

    it("returns a ModelBusyError for throttling inside a ConverseStream that began with 200", async () => {
      const error = await failedCall({ text: "one two three four", streamError: { type: "throttlingException", message: "slow down", afterDeltas: 1 } }, true);
      expect(error).toBeInstanceOf(ModelBusyError);
      expect(error).toMatchObject({ code: "model_busy", cause: { name: "ThrottlingException" } });
    });

    it.each([
      [400, "ValidationException", "model_invalid_request"],
      [404, "ResourceNotFoundException", "model_not_found"],
      [500, "InternalServerException", "model_unreachable"],
      [424, "ModelErrorException", "model_unreachable"],
      [408, "ModelTimeoutException", "model_unreachable"],
    ])("returns a ModelCallFailedError for Bedrock's %i %s, with code %s and a one-line reason", async (status, type, code) => {
      const error = await failedCall({ error: { status, type, message: "The request was refused because of a detail." } });
      expect(error).toBeInstanceOf(ModelCallFailedError);
      expect(error).not.toBeInstanceOf(ModelBusyError);
      expect(error).toMatchObject({ code, reason: `${type} (HTTP ${status})`, cause: { name: type } });
      expect((error as ModelCallFailedError).reason).not.toMatch(/\n|detail/);
    });

    it("returns model_unreachable, not a bare Error, when the model hangs past @langchain/aws's stream idle timeout", async () => {
      endpoint.setResponder(async () => {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        return { text: "Too late." };
      });
      try {
        const error = await withEndpoint(() => {
          const model = new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 16, streamIdleTimeout: 200 });
          model.client.config.maxAttempts = async () => 1;
          return collect(model.stream([new HumanMessage("Hello?")])).then(() => expect.unreachable("the call succeeded"), modelCallError);
        });
        expect(error).toMatchObject({ name: "ModelCallFailedError", code: "model_unreachable", reason: "Error (MODEL_STREAM_TIMEOUT)" });
      } finally {
        endpoint.setResponder(() => ({ text: "Hello." }));
      }
    });

    it("returns model_unreachable when nothing answers at the endpoint", async () => {
      const model = new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 16, endpointHost: "http://127.0.0.1:9" });
      model.client.config.maxAttempts = async () => 1;
      const error = await withEndpoint(() => model.invoke([new HumanMessage("Hello?")]).catch((e: unknown) => modelCallError(e)));
      expect(error).toMatchObject({ name: "ModelCallFailedError", code: "model_unreachable", reason: expect.stringMatching(/ECONNREFUSED|ERR_HTTP2_/) });
    });
  });
});

describe("incompleteAnswerError", () => {
  const answer = (response_metadata: Record<string, unknown>) => new AIMessage({ content: "Looking it ", response_metadata });

  it("returns model_unreachable for a Bedrock answer without its stop reason (a stream cut before messageStop)", () => {
    const error = incompleteAnswerError("aws.bedrock", answer({ model_provider: "bedrock-converse" }));
    expect(error).toBeInstanceOf(ModelCallFailedError);
    expect(error?.code).toBe("model_unreachable");
  });

  it("returns model_unreachable for a streamed Bedrock answer with its stop reason but no metadata event", () => {
    expect(incompleteAnswerError("aws.bedrock", answer({ messageStop: { stopReason: "end_turn" } }))?.code).toBe("model_unreachable");
  });

  it("returns nothing for a streamed answer with both events, or a whole Converse answer with its stopReason", () => {
    expect(incompleteAnswerError("aws.bedrock", answer({ messageStop: { stopReason: "end_turn" }, metadata: { usage: {} } }))).toBeUndefined();
    expect(incompleteAnswerError("aws.bedrock", answer({ stopReason: "tool_use" }))).toBeUndefined();
  });

  it("returns nothing for the offline model, which names no stop reason", () => {
    expect(incompleteAnswerError("threadwise.local", answer({}))).toBeUndefined();
  });
});
