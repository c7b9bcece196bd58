// Stands in for zod 4's ahead-of-time schema compiler (`core/compile.js`, ~30 KB minified) in the
// Lambda bundles: it is kept only because `import { z } from "zod"` keeps every export of `z`, and
// nothing here calls `z.compile`. This behaves as the real compiler does for a schema it cannot
// model: `compile` returns the schema unchanged, so it keeps the runtime parser (zod documents
// that as invisible to callers), and only `{ strict: true }` or the low-level entry points refuse.
export const INVALID = Symbol.for("zod.compile.invalid");

export class ZodCompileAsyncError extends Error {
  constructor(message = "z.compile does not support async refinements, transforms, or checks") {
    super(message);
    this.name = "ZodCompileAsyncError";
  }
}

export class ZodCompileUnsupportedError extends Error {
  constructor(
    feature: string,
    readonly islandable = true,
  ) {
    super(`z.compile does not support ${feature}; this schema must use the runtime parser`);
    this.name = "ZodCompileUnsupportedError";
  }
}

const NOT_BUNDLED = "the schema compiler, which the Lambda bundles leave out";

export function compile<T>(schema: T, options?: { strict?: boolean }): T {
  if (options?.strict) throw new ZodCompileUnsupportedError(NOT_BUNDLED, false);
  return schema;
}

export function compileFn(): never {
  throw new ZodCompileUnsupportedError(NOT_BUNDLED, false);
}

export function withParser(): never {
  throw new ZodCompileUnsupportedError(NOT_BUNDLED, false);
}
