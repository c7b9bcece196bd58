import { describe, expect, it } from "vitest";
import { z } from "zod";
import { editedArgumentIssues } from "../../lib/approvals/edited-arguments.js";

/** A schema as an approval records it: the tool's zod schema as offered to the model, as JSON text. */
const recorded = (schema: z.ZodType) => JSON.stringify(z.toJSONSchema(schema, { io: "input" }));

const followUp = recorded(
  z.object({
    title: z.string().min(3).max(200),
    dueDate: z.iso.date().optional(),
    tags: z.array(z.string()).max(2).optional(),
  }),
);

describe("editedArgumentIssues", () => {
  it("returns no issue for arguments the schema accepts", () => {
    expect(editedArgumentIssues(followUp, { title: "Call the supplier", dueDate: "2026-12-24" })).toEqual([]);
  });

  it("returns one issue per path, the first the schema finds, for a value failing its format and its pattern", () => {
    const issues = editedArgumentIssues(followUp, { title: "Call", dueDate: "tomorrow" });
    expect(issues).toEqual([{ path: "dueDate", message: "Invalid ISO date" }]);
  });

  it("names nested paths with dots, and a missing required field by its name", () => {
    const issues = editedArgumentIssues(followUp, { tags: ["a", 1] });
    expect(issues.map((i) => i.path)).toEqual(["title", "tags.1"]);
  });

  it("names the arguments as a whole when they are not an object", () => {
    expect(editedArgumentIssues(followUp, ["title"])).toEqual([{ path: "(arguments)", message: expect.stringContaining("expected object") }]);
  });

  it("refuses unknown fields when the schema is strict", () => {
    const strict = recorded(z.strictObject({ title: z.string() }));
    expect(editedArgumentIssues(strict, { title: "x", extra: 1 }).map((i) => i.path)).toEqual(["(arguments)"]);
  });

  it("refuses a field the schema does not name, which the tool would drop: a mistyped name is refused, not run without", () => {
    expect(editedArgumentIssues(followUp, { title: "Call the supplier", duedate: "2026-12-24" })).toEqual([
      { path: "(arguments)", message: expect.stringContaining('"duedate"') },
    ]);
  });

  it("refuses a field the schema does not name inside a nested object, at that object's path", () => {
    const nested = recorded(z.object({ title: z.string(), owner: z.object({ name: z.string() }).optional() }));
    expect(editedArgumentIssues(nested, { title: "Call", owner: { name: "Ada", mail: "a@b.c" } }).map((i) => i.path)).toEqual(["owner"]);
  });

  it("accepts fields a schema that allows any lets through", () => {
    const open = recorded(z.looseObject({ title: z.string() }));
    expect(editedArgumentIssues(open, { title: "Call", extra: 1 })).toEqual([]);
  });

  it("refuses every edit of an approval that recorded no schema", () => {
    expect(editedArgumentIssues(undefined, { title: "Call the supplier" })).toEqual([
      { path: "(arguments)", message: "this approval was opened before edits were recorded; approve or reject it" },
    ]);
  });
});
