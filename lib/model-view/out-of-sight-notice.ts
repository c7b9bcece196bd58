/**
 * The notice's count moves in steps of this many turns, so the system part of the view (the prefix a
 * prompt cache keeps) changes once every ten turns, not on every turn.
 */
export const DEFAULT_OUT_OF_SIGHT_STEP_TURNS = 10;

/** How the view tells the model that earlier turns exist out of its sight. */
export interface OutOfSightPolicy {
  /** The tool that searches them (`search_conversation`). */
  toolName: string;
  /** Default: {@link DEFAULT_OUT_OF_SIGHT_STEP_TURNS}. */
  stepTurns?: number;
}

/**
 * The line added to the system part when finished turns are out of sight: a lower bound on their
 * count, rounded down to a step (1, 10, 20, …), and the tool that searches them. None when none are.
 */
export function outOfSightNotice(hiddenTurns: number, policy: OutOfSightPolicy): string | undefined {
  if (hiddenTurns <= 0) return undefined;
  const step = policy.stepTurns ?? DEFAULT_OUT_OF_SIGHT_STEP_TURNS;
  const shown = Math.max(1, Math.floor(hiddenTurns / step) * step);
  const count = shown === 1 ? "At least 1 earlier turn" : `At least ${shown} earlier turns`;
  return (
    `${count} of this conversation ${shown === 1 ? "is" : "are"} not shown to you. ` +
    `When the user refers to something said before that you cannot see, call ${policy.toolName} to search those turns.`
  );
}
