// Stands in for @langchain/core's `load/import_map.js` in the Lambda bundles. `load()` revives
// serialized LangChain objects by looking their namespace up in this map; the checkpoint
// serializer calls it for every LangChain object in a checkpoint. The full map imports nearly all
// of @langchain/core (prompts, output parsers, retrievers, testing fakes, ~160 KB minified),
// while the serializable data a state holds here is messages; prompt values are kept as the other
// data class. Anything else fails to revive loudly (`load()` throws on an unknown namespace)
// rather than coming back as something else.
import * as messages from "@langchain/core/messages";
import * as messagesTool from "@langchain/core/messages/tool";
import * as promptValues from "@langchain/core/prompt_values";

export const import_map_exports = {
  messages,
  messages__tool: messagesTool,
  prompt_values: promptValues,
};
