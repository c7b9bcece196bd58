/**
 * Splits a reply into pieces of at most `maxChars`, preferring paragraph, then line, then word
 * boundaries, so a long answer arrives whole as several messages instead of being cut off.
 */
export function splitText(text: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > maxChars) {
    const window = rest.slice(0, maxChars);
    const cut = [window.lastIndexOf("\n\n"), window.lastIndexOf("\n"), window.lastIndexOf(" ")].find(
      (at) => at > maxChars / 2,
    );
    const end = cut ?? maxChars;
    pieces.push(rest.slice(0, end).trimEnd());
    rest = rest.slice(end).trimStart();
  }
  if (rest.length > 0 || pieces.length === 0) pieces.push(rest);
  return pieces;
}
