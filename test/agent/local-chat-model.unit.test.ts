import { type AIMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { describeArguments, LOCAL_MODEL_EXAMPLES, LocalChatModel, MAX_ARGUMENT_DEPTH, type FunctionTool } from "../../lib/agent/local-chat-model.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../support/linear-work.js";

const sqlQuery: FunctionTool = {
  type: "function",
  function: {
    name: "sql_query",
    description: "one read-only query",
    parameters: { type: "object", properties: { sql: { type: "string" }, maxRows: { type: "integer" } }, required: ["sql"] },
  },
};
const model = new LocalChatModel().bindTools([sqlQuery]);

async function answer(text: string): Promise<AIMessage> {
  return (await model.invoke([new HumanMessage(text)])) as AIMessage;
}

describe("LocalChatModel", () => {
  describe("stream", () => {
    it("returns the answer a word at a time, with the usage and text invoke returns", async () => {
      const question = [new HumanMessage("What is streaming for?")];
      const words: string[] = [];
      let usage;
      for await (const chunk of await model.stream(question)) {
        if (chunk.text) words.push(chunk.text);
        usage ??= chunk.usage_metadata;
      }
      const whole = await model.invoke(question);
      expect(words.length).toBeGreaterThan(3);
      expect(words.join("")).toBe(whole.content);
      expect(usage).toEqual(whole.usage_metadata);
    });

    it("returns a tool call whole in its last chunk", async () => {
      let last;
      for await (const chunk of await model.stream([new HumanMessage('sql_query {"sql": "SELECT 1"}')])) last = chunk;
      expect(last!.tool_calls).toEqual([expect.objectContaining({ name: "sql_query", args: { sql: "SELECT 1" } })]);
    });
  });

  describe("invoke", () => {
    it("returns a call of the tool named before a JSON object, with its arguments", async () => {
      const message = await answer('Count them: sql_query {"sql": "SELECT count(*) FROM orders"}');
      expect(message.tool_calls).toEqual([expect.objectContaining({ name: "sql_query", args: { sql: "SELECT count(*) FROM orders" } })]);
    });

    it("returns what is wrong and the arguments the tool takes when the JSON does not parse, and calls nothing", async () => {
      // A JSON typo was once passed over: the model echoed the text and nobody could tell the tool was not called.
      const message = await answer("sql_query {'sql': 'SELECT 1'}");
      expect(message.tool_calls ?? []).toEqual([]);
      expect(message.content).toMatch(
        /^I did not call sql_query: the arguments are not valid JSON \(.+\)\. sql_query takes a JSON object like \{"sql": string, "maxRows"\?: integer\}\.$/,
      );
    });

    it("returns what is wrong when the object is not closed", async () => {
      expect((await answer('sql_query {"sql": "SELECT 1"')).content).toBe(
        "I did not call sql_query: the JSON object of arguments is not closed (a } is missing). sql_query takes a " +
          'JSON object like {"sql": string, "maxRows"?: integer}.',
      );
      expect((await answer('sql_query {"sql": "SELECT 1}')).content).toContain("a string in the arguments is not closed");
    });

    it("returns what is wrong when the arguments nest too deep to be serialised", async () => {
      const deep = `sql_query {"sql": ${"[".repeat(8_000)}${"]".repeat(8_000)}}`;
      expect((await answer(deep)).content).toContain(`the arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels`);
    });

    it("answers from the conversation when no tool is named before an object", async () => {
      expect((await answer("what does sql_query do?")).content).toMatch(/^You asked/);
    });

    it(
      "answers in time linear in the question",
      async () => {
        const respond = (text: string) => (model as unknown as { respond(m: HumanMessage[]): AIMessage }).respond([new HumanMessage(text)]);
        expectLinearWork(respond, { wrap: (text) => `sql_query ${text}` });
      },
      LINEAR_WORK_TIMEOUT_MS,
    );
  });

  describe("LOCAL_MODEL_EXAMPLES", () => {
    it("returns an answer to the last example recalled from the first", async () => {
      const [statement, question] = LOCAL_MODEL_EXAMPLES;
      const first = await model.invoke([new HumanMessage(statement)]);
      const answer = await model.invoke([new HumanMessage(statement), first, new HumanMessage(question)]);
      expect(answer.content).toBe("Your name is Ada.");
    });
  });

  describe("describeArguments", () => {
    it("returns the fields with their types, optional ones marked", () => {
      expect(describeArguments(sqlQuery)).toBe('{"sql": string, "maxRows"?: integer}');
    });
  });
});
