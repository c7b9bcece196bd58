/** The CloudWatch EMF documents (metrics) the handlers print with `console.log` while `run` runs. */
export async function emfOf(run: () => Promise<unknown>): Promise<Record<string, any>[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l._aws?.CloudWatchMetrics);
}
