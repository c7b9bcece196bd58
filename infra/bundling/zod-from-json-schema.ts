// Stands in for zod 4's `classic/from-json-schema.js` (~12 KB minified) in the Lambda bundles: it is
// kept only because `import { z } from "zod"` keeps every export of `z`, and nothing here converts
// JSON Schema into zod (tool schemas go the other way, from zod to JSON Schema). A call says so.
export function fromJSONSchema(): never {
  throw new Error("z.fromJSONSchema is left out of the Lambda bundles");
}
