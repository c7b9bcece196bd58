import { type AIMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { refersBack } from "../../lib/agent/back-references.js";
import { type FunctionTool, LocalChatModel } from "../../lib/agent/local-chat-model.js";
import { SAMPLE_QUESTIONS } from "../../lib/tools/sample-questions.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../support/linear-work.js";

/** Topics people ask back about, each with its own words. */
const TOPICS = ["the budget for Q3", "the vendor for the warehouse", "Ada's start date", "the launch plan", "our discount policy", "the server migration"];

/** How people point back, each with a slot for the topic: generated against every topic below. */
const BACK_REFERENCES = [
  "I mentioned {} before, what was it?",
  "I mentioned {} earlier.",
  "As I mentioned, {} matters here.",
  "I already told you about {}.",
  "I said something about {} a while ago.",
  "remind me about {}",
  "Remind me what we said about {}.",
  "Can you remind me of {}?",
  "What did we say about {}?",
  "What did we decide about {}?",
  "what did you suggest for {}",
  "What did I tell you about {}?",
  "Which option did we pick for {}?",
  "Do you remember {}?",
  "do you recall {}?",
  "You said {} was settled, right?",
  "You told me about {} at the start.",
  "We agreed on {} last time.",
  "We discussed {} earlier, what was the outcome?",
  "Going back to {}, where are we?",
  "Refresh my memory on {}.",
  "As discussed, {} is next.",
  "What was {} again?",
  "What was {} we talked about?",
  "Earlier you brought up {}. What was the point?",
  "I forgot what we said about {}.",
  "I\u2019ve already mentioned {}, haven\u2019t I?",
  "What's our plan for {}?",
  "When is my deadline for {}?",
  "What was the conclusion about {}?",
];

/** Fresh questions: none of them points back, so none may make the offline model search. */
const FRESH = [
  // The sample questions' words before the tool they name (the offline model calls that tool first anyway).
  ...Object.values(SAMPLE_QUESTIONS)
    .flat()
    .map((sample) => sample.replace(/ ?(sql_query|search_documents|create_follow_up) \{.*$/s, ""))
    .filter((question) => question !== ""),
  "What is the capital of France?",
  "How many orders were there last month?",
  "What were sales last month?",
  "Why did margin fall last month?",
  "Tell me a joke about spreadsheets.",
  "Hello!",
  "My name is Ada.",
  "Our budget for Q3 is 40,000 euros.",
  "Please summarise the handbook's travel policy.",
  "How is gross margin defined?",
  "Which region has the most customers?",
  "Who must approve a 30% discount?",
  "",
];

const phrasings = BACK_REFERENCES.flatMap((template) => TOPICS.map((topic) => template.replace("{}", topic)));

const searchTool: FunctionTool = {
  type: "function",
  function: { name: "search_conversation", description: "search earlier turns", parameters: { type: "object", properties: { query: { type: "string" } } } },
};
/** The system part as the view writes it when earlier turns are out of sight. */
const OUT_OF_SIGHT = "At least 1 earlier turn of this conversation is not shown to you; search_conversation finds what was said in it.";
const model = new LocalChatModel().bindTools([searchTool]);

describe("back-references", () => {
  describe("refersBack", () => {
    it(`returns true for each of ${phrasings.length} generated back-references (${BACK_REFERENCES.length} phrasings × ${TOPICS.length} topics)`, () => {
      expect(phrasings.filter((question) => !refersBack(question))).toEqual([]);
    });

    it(`returns true for them in any case and with trailing spaces`, () => {
      const shouted = phrasings.map((question) => `${question.toUpperCase()}   `);
      expect(shouted.filter((question) => !refersBack(question))).toEqual([]);
    });

    it(`returns false for ${FRESH.length} fresh questions: the sample questions, facts stated, and questions about the world`, () => {
      expect(FRESH.filter((question) => refersBack(question))).toEqual([]);
    });

    it(
      "returns in time linear in the question's length",
      () => {
        expectLinearWork(refersBack, { wrap: (text) => `what did we say about ${text} I mentioned before` });
      },
      LINEAR_WORK_TIMEOUT_MS,
    );
  });

  describe("the offline model with earlier turns out of sight", () => {
    it("returns a search_conversation call with the question for every generated back-reference", async () => {
      const missed: string[] = [];
      for (const question of phrasings) {
        const reply = (await model.invoke([new SystemMessage(OUT_OF_SIGHT), new HumanMessage(question)])) as AIMessage;
        const call = reply.tool_calls?.[0];
        if (call?.name !== "search_conversation" || call.args.query !== question.trim()) missed.push(question);
      }
      expect(missed).toEqual([]);
    });

    it("returns an answer without searching for every fresh question", async () => {
      const searched: string[] = [];
      for (const question of FRESH.filter((q) => q !== "")) {
        const reply = (await model.invoke([new SystemMessage(OUT_OF_SIGHT), new HumanMessage(question)])) as AIMessage;
        if (reply.tool_calls?.some((call) => call.name === "search_conversation")) searched.push(question);
      }
      expect(searched).toEqual([]);
    });

    it("returns no search when nothing is out of sight, however the question points back", async () => {
      const reply = (await model.invoke([new SystemMessage("You are helpful."), new HumanMessage("I mentioned the budget before, what was it?")])) as AIMessage;
      expect(reply.tool_calls ?? []).toEqual([]);
    });
  });
});
