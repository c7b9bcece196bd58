import { describe, expect, it } from "vitest";
import { NotFoundError, ValidationError } from "../../lib/errors.js";
import { checkRun } from "../../lib/api/agent-protocol-run-start.js";
import { AGENT_PROTOCOL_ASSISTANT_ID, runBody } from "../../lib/api/agent-protocol-schemas.js";

const input = { messages: [{ type: "human", content: "hi" }] };
const body = (fields: Record<string, unknown>) => runBody.parse({ assistant_id: AGENT_PROTOCOL_ASSISTANT_ID, ...fields });
const queue = { hasQueue: true };
const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("not refused");
};

describe("agent-protocol-run-start", () => {
  describe("checkRun", () => {
    it("returns enqueue false for input under the default strategy, and true for enqueue with a queue", () => {
      expect(checkRun(body({ input }), queue)).toEqual({ enqueue: false });
      expect(checkRun(body({ input, multitask_strategy: "enqueue" }), queue)).toEqual({ enqueue: true });
      expect(checkRun(body({ command: { resume: "approve" } }), { hasQueue: false })).toEqual({ enqueue: false });
    });

    it("throws NotFoundError for another assistant", () => {
      expect(refusal(() => checkRun(runBody.parse({ assistant_id: "other-graph", input }), queue))).toBeInstanceOf(NotFoundError);
    });

    it("throws ValidationError naming each field it cannot honour", () => {
      const error = refusal(() => checkRun(body({ input, checkpoint_id: "c1", webhook: "https://example.com" }), queue));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).message).toBe("checkpoint_id, webhook not served: a run continues the thread from its latest state");
    });

    it("throws ValidationError for a strategy not served, and for enqueue without a queue", () => {
      expect(refusal(() => checkRun(body({ input, multitask_strategy: "rollback" }), queue))).toMatchObject({
        message: "multitask_strategy rollback is not served",
      });
      expect(refusal(() => checkRun(body({ input, multitask_strategy: "enqueue" }), { hasQueue: false }))).toBeInstanceOf(ValidationError);
    });

    it("throws ValidationError unless the run takes exactly one of input and command.resume, and for update or goto", () => {
      expect(refusal(() => checkRun(body({}), queue))).toMatchObject({ message: "a run takes input or command.resume, exactly one" });
      expect(refusal(() => checkRun(body({ input, command: { resume: "approve" } }), queue))).toBeInstanceOf(ValidationError);
      expect(refusal(() => checkRun(body({ command: { resume: "approve", goto: "agent" } }), queue))).toMatchObject({
        message: "a command may only resume: update and goto are not served",
      });
    });
  });
});
