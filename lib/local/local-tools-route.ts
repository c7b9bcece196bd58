import { describeArguments, LOCAL_MODEL_EXAMPLES } from "../agent/local-chat-model.js";
import { json, type Authenticate } from "../api/http.js";
import type { Route } from "../api/router.js";
import type { ModelProvider } from "../config/model-config.js";
import type { ToolRegistry } from "../tools/tool-registry.js";

export interface LocalToolsRouteOptions {
  authenticate: Authenticate;
  tools: Pick<ToolRegistry, "available" | "toolSpecs">;
  model: ModelProvider;
}

/**
 * `GET /local/tools`: what the console's empty state lists, from the running product: the tools the
 * caller may use, each with its arguments and the example questions its data answers, and a
 * conversation the offline model answers without tools. Served by the local server only.
 */
export function localToolsRoute(options: LocalToolsRouteOptions): Route {
  return {
    method: "GET",
    pattern: /^\/local\/tools$/,
    handler: async (request) => {
      const caller = await options.authenticate(request);
      const specs = options.tools.toolSpecs(caller);
      const tools = options.tools.available(caller).map((tool, i) => ({
        name: tool.name,
        description: tool.description,
        arguments: describeArguments(specs[i]),
        examples: tool.examples ?? [],
      }));
      return json(200, { model: options.model, tools, conversation: LOCAL_MODEL_EXAMPLES });
    },
  };
}
