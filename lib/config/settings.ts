import { z } from "zod";

/**
 * One setting, defined once: its environment variable (the key it is listed under), its zod
 * schema, its default and what it means. The env schemas, the defaults applied and docs/configuration.md's
 * configuration table (`npm run docs:config`) are all derived from these.
 */
export interface Setting<S extends z.ZodType = z.ZodType> {
  schema: S;
  /** Applied when the variable is unset; without it, unset stays unset. */
  default?: z.output<S>;
  /** The default as docs/configuration.md says it, when it is not a plain value ("embedded server"). */
  defaultText?: string;
  /** What it means, one line of docs/configuration.md's table. */
  description: string;
}

/**
 * The longest delay a Node.js timer holds: 2^31 - 1 ms, about 24.8 days. A longer one fires after
 * 1 ms with only a warning, so a generous timeout would end every wait at once.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Milliseconds a timer waits: a positive integer no timer cuts short. */
export const durationMs = z.coerce
  .number()
  .int()
  .positive()
  .max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (about 24.8 days), the longest wait a Node.js timer holds`);

/** Seconds a timer waits, as `durationMs` bounds them. */
export const durationSeconds = z.coerce
  .number()
  .int()
  .positive()
  .max(Math.floor(MAX_TIMER_MS / 1000), `must be at most ${Math.floor(MAX_TIMER_MS / 1000)} s (about 24.8 days), the longest wait a Node.js timer holds`);

type WithDefault<S extends z.ZodType> = Setting<S> & { default: z.output<S> };

export function setting<S extends z.ZodType>(definition: WithDefault<S>): WithDefault<S>;
export function setting<S extends z.ZodType>(definition: Setting<S>): Setting<S>;
export function setting<S extends z.ZodType>(definition: Setting<S>): Setting<S> {
  return definition;
}

export type Settings = Record<string, Setting>;

/** The settings' values: the default where one is defined and the variable is unset. */
export type SettingValues<T extends Settings> = {
  [K in keyof T]: T[K] extends { default: unknown } ? z.output<T[K]["schema"]> : z.output<T[K]["schema"]> | undefined;
};

/**
 * A blank variable (`PORT=` in a shell or an env file) is unset, as an empty CDK context key or
 * secret key is: its default applies, rather than `""` coerced to 0 (`VIEW_FINISHED_TURNS=` kept no turns).
 */
const blankAsUnset = (value: unknown): unknown => (typeof value === "string" && value.trim() === "" ? undefined : value);

/** An optional variable: blank is unset, anything else is validated by `schema`. Also for variables read beside the settings (`AWS_REGION`). */
export const optionalVariable = <S extends z.ZodType>(schema: S) => z.preprocess(blankAsUnset, schema.optional());

/** The env schema of some settings: each variable optional, validated by its setting's schema. */
export function envSchemaOf<T extends Settings>(settings: T) {
  const shape = Object.fromEntries(Object.entries(settings).map(([name, s]) => [name, optionalVariable(s.schema)]));
  return z.object(shape as unknown as { [K in keyof T]: z.ZodOptional<T[K]["schema"]> });
}

/** Parsed variables with the defaults applied. */
export function withDefaults<T extends Settings>(settings: T, parsed: Record<string, unknown>): SettingValues<T> {
  return Object.fromEntries(Object.entries(settings).map(([name, s]) => [name, parsed[name] ?? s.default])) as SettingValues<T>;
}

/** A variable read outside the settings (by an SDK, or as a credential in local mode), listed so the table is whole. */
export interface DocumentedVariable {
  defaultText: string;
  description: string;
}

function defaultCell(s: Setting | DocumentedVariable): string {
  if (s.defaultText !== undefined) return s.defaultText;
  const value = (s as Setting).default;
  if (value === undefined) return "unset";
  return typeof value === "string" ? `\`${value}\`` : String(value);
}

/** The configuration table of docs/configuration.md: one row per variable, in the order given. */
export function configTable(variables: Record<string, Setting | DocumentedVariable>): string {
  const rows = Object.entries(variables).map(([name, s]) => `| \`${name}\` | ${defaultCell(s)} | ${s.description} |`);
  return ["| variable | default | meaning |", "|---|---|---|", ...rows].join("\n");
}
