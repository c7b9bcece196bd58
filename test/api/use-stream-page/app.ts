import { useStream } from "@langchain/langgraph-sdk/react";
import { createElement as h, useState } from "react";
import { createRoot } from "react-dom/client";

/**
 * A small chat page on LangGraph's own React hook, `useStream`, as a team's existing frontend would
 * be: it knows nothing of Threadwise but the assistant id and the bearer token (`?token=`).
 */
const token = new URLSearchParams(location.search).get("token") ?? "";

const textOf = (content: unknown) => (typeof content === "string" ? content : JSON.stringify(content));

function App() {
  const [threadId, setThreadId] = useState<string | null>(null);
  const [text, setText] = useState("");
  const stream = useStream({
    apiUrl: location.origin,
    assistantId: "threadwise",
    threadId,
    onThreadId: setThreadId,
    defaultHeaders: { authorization: `Bearer ${token}` },
    messagesKey: "messages",
  });
  const interrupt = stream.interrupt as { value?: { approvals?: { tool: string }[] } } | undefined;
  return h(
    "main",
    null,
    h(
      "ol",
      { id: "messages" },
      stream.messages.map((m, i) => h("li", { key: m.id ?? i, "data-type": m.type }, textOf(m.content))),
    ),
    interrupt
      ? h(
          "div",
          { id: "interrupt" },
          h("span", { id: "waiting-tool" }, interrupt.value?.approvals?.map((a) => a.tool).join(", ") ?? ""),
          h("button", { id: "approve", type: "button", onClick: () => stream.submit(undefined, { command: { resume: "approve" } }) }, "Approve"),
        )
      : null,
    h(
      "form",
      {
        onSubmit: (event: { preventDefault(): void }) => {
          event.preventDefault();
          stream.submit({ messages: [{ type: "human", content: text }] });
          setText("");
        },
      },
      h("input", { id: "question", value: text, onChange: (event: { target: { value: string } }) => setText(event.target.value) }),
      h("button", { id: "send", type: "submit" }, "Send"),
    ),
    h("p", { id: "status" }, stream.isLoading ? "loading" : "idle"),
    stream.error ? h("p", { id: "error" }, String(stream.error)) : null,
    h("p", { id: "thread" }, threadId ?? ""),
  );
}

createRoot(document.getElementById("root") as HTMLElement).render(h(App));
