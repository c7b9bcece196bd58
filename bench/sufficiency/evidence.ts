import type { Evidence } from "./case-schema.js";

/** Lower case, spaces collapsed, thousands separators dropped ("12,345.60" and "12345.60" are one number), JSON quotes unescaped. */
export function normalizeForEvidence(text: string): string {
  return text
    .replace(/\\"/g, '"')
    .toLowerCase()
    .replace(/(\d),(?=\d{3}\b)/g, "$1")
    .replace(/\s+/g, " ");
}

/** Whether an evidence unit (its text or one of its alternatives) occurs in a text. */
export function evidenceIn(evidence: Evidence, text: string): boolean {
  const haystack = normalizeForEvidence(text);
  return [evidence.text, ...(evidence.alternatives ?? [])].some((needle) => haystack.includes(normalizeForEvidence(needle)));
}
