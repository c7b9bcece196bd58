/**
 * What the product logs through: fixed lowercase messages, variable data in fields, numbers
 * about messages and never their contents. Powertools' Logger fits it as it is.
 */
export interface StructuredLogger {
  info(message: string, fields: Record<string, unknown>): void;
  warn(message: string, fields: Record<string, unknown>): void;
  error(message: string, fields: Record<string, unknown>): void;
}

/** One JSON line per entry on stdout/stderr: the local server's logger. */
export const jsonConsoleLogger: StructuredLogger = {
  info: (message, fields) => console.log(JSON.stringify({ level: "info", message, ...fields })),
  warn: (message, fields) => console.warn(JSON.stringify({ level: "warn", message, ...fields })),
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
};

/** For tests and embedders that want silence. */
export const silentLogger: StructuredLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
