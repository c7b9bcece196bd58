/**
 * Splits a reply into pieces of at most `maxChars`, preferring paragraph, then line, then word
 * boundaries in the second half of a piece, then any blank, and cutting inside a word only when
 * the piece has no blank at all. A long answer so arrives whole as several messages.
 */
export function splitText(text: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > maxChars) {
    const window = rest.slice(0, maxChars + 1);
    const preferred = [window.lastIndexOf("\n\n"), window.lastIndexOf("\n"), window.lastIndexOf(" ")].find((at) => at > maxChars / 2);
    const anyBlank = Math.max(window.lastIndexOf(" "), window.lastIndexOf("\n"), window.lastIndexOf("\t"));
    const end = preferred ?? (anyBlank > 0 ? anyBlank : maxChars);
    pieces.push(rest.slice(0, end).trimEnd());
    rest = rest.slice(end).trimStart();
  }
  if (rest.length > 0 || pieces.length === 0) pieces.push(rest);
  return pieces;
}
