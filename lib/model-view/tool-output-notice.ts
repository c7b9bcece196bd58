/** Name of the tool that reads part of an offloaded output; the notice tells the model to call it. */
export const READ_TOOL_OUTPUT_TOOL = "read_tool_output";

/** Characters of the output's preview quoted in a notice, so the model sees its shape. */
export const DEFAULT_NOTICE_PREVIEW_CHARS = 400;

export interface ToolOutputNoticeInput {
  toolName: string;
  tokens: number;
  /** Artifact handle; absent when the output lives only in the thread state. */
  handle?: string;
  preview: string;
  reason: "over-threshold" | "over-budget";
  threshold: number;
}

function clip(text: string, chars: number): string {
  if (text.length <= chars) return text;
  // Do not cut a surrogate pair in half.
  const end = /[\uD800-\uDBFF]/.test(text[chars - 1]) ? chars - 1 : chars;
  return `${text.slice(0, end)}…`;
}

/**
 * The text that stands in the view for a tool output left out of it: tool name, size, handle and
 * how to ask for a narrower part. The stored message keeps the original.
 */
export function toolOutputNotice(input: ToolOutputNoticeInput): string {
  const why =
    input.reason === "over-threshold"
      ? `over the ${input.threshold}-token limit for one tool output`
      : "left out to keep this request within its context budget";
  const lines = [`[Output of tool "${input.toolName}" not shown: ${input.tokens} tokens, ${why}.]`];
  if (input.handle) {
    lines.push(
      `Handle: ${input.handle}`,
      `To read part of it, call ${READ_TOOL_OUTPUT_TOOL} with {"handle": "${input.handle}"} and ` +
        `startLine/lineCount for a range of lines or rows, or search for the lines that contain a text.`,
    );
  } else {
    lines.push(`It was not stored separately, so call "${input.toolName}" again with a narrower request (a filter, fewer rows or columns).`);
  }
  const preview = input.preview.trim();
  if (preview.length > 0) lines.push("Beginning of the output:", clip(preview, DEFAULT_NOTICE_PREVIEW_CHARS));
  return lines.join("\n");
}
