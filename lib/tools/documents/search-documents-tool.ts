import { z } from "zod";
import { DEFAULT_DOCUMENT_RESULTS } from "../../config/tools-config.js";
import type { ToolContext, ToolDefinition } from "../tool.js";
import { audienceOf } from "./document-access.js";
import type { DocumentRetriever, Passage } from "./document-retriever.js";

export interface SearchDocumentsToolOptions {
  retriever: DocumentRetriever;
  /** Default: `DEFAULT_DOCUMENT_RESULTS`. */
  maxResults?: number;
}

const schema = z.object({
  query: z.string().trim().min(2).max(500).describe("What to look for, in words (e.g. 'discount approval above 15%')"),
  maxResults: z.number().int().min(1).max(20).optional().describe("How many passages to return"),
});

function formatPassage(p: Passage, index: number): string {
  const where = [p.title, p.heading].filter(Boolean).join(" › ");
  return `[${index + 1}] source: ${p.source}${where ? ` | ${where}` : ""} | score ${p.score}\n${p.text}`;
}

/** `search_documents`: passages from company documents (policies, metric definitions, reports), with their source. */
export function createSearchDocumentsTool(options: SearchDocumentsToolOptions): ToolDefinition<typeof schema> {
  const defaultResults = options.maxResults ?? DEFAULT_DOCUMENT_RESULTS;
  return {
    name: "search_documents",
    description:
      "Search company documents (policies, metric definitions, regions and segments, monthly reports) and get " +
      "the best-matching passages with their source. Cite the source when you use a passage.",
    schema,
    sideEffects: false,
    // Its text comes from outside the conversation (or repeats what such a tool returned): it may carry instructions.
    trust: "untrusted",
    async run(input: z.infer<typeof schema>, ctx: ToolContext): Promise<string> {
      // Only documents open to the caller's tenant and groups are searched: the filter goes to the retriever, not after it.
      const passages = await options.retriever.search(input.query, input.maxResults ?? defaultResults, {
        audience: audienceOf(ctx.caller),
        signal: ctx.signal,
      });
      if (passages.length === 0) return `No passages you may read match "${input.query}". Try other words.`;
      return `${passages.length} passage${passages.length === 1 ? "" : "s"}\n\n${passages.map(formatPassage).join("\n\n")}`;
    },
  };
}
