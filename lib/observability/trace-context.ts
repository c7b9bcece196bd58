/** The SQS message attribute that carries a turn's correlation id from the API or webhook to the worker. */
export const CORRELATION_ID_ATTRIBUTE = "correlationId";

/**
 * What a queued turn carries of the request that queued it, so that one turn is one trace: the
 * correlation id its logs share (the API Gateway request id) and the X-Ray trace header, sent as
 * the SQS system attribute `AWSTraceHeader`.
 */
export interface TraceContext {
  correlationId?: string;
  traceHeader?: string;
}

/** An X-Ray trace header (`Root=…;Parent=…;Sampled=…`) for the current segment, or none outside a trace. */
export function xrayTraceHeader(trace: { root?: string; parent?: string; sampled: boolean }): string | undefined {
  if (!trace.root) return undefined;
  return `Root=${trace.root}${trace.parent ? `;Parent=${trace.parent}` : ""};Sampled=${trace.sampled ? 1 : 0}`;
}
