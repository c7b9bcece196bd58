import { ValidationError } from "../lib/errors.js";
import { DEFAULT_WEBHOOK_CONCURRENCY } from "./stage-config.js";

/** The stack's functions, as named in `<stage>-threadwise-<name>`. */
export const FUNCTION_NAMES = ["api", "worker", "slack", "teams", "setup", "stream"] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/**
 * Most pooled MongoDB connections per container. A container serves one invocation at a time; a
 * turn runs a few operations at once (index checks, a checkpoint's header and blobs), a webhook one
 * insert. Measured by `npm run bench:mongodb-connections`.
 */
export const FUNCTION_POOL_SIZES: Readonly<Record<FunctionName, number>> = { api: 4, worker: 4, slack: 1, teams: 1, setup: 4, stream: 4 };

export interface ConnectionBudgetInput {
  /** Connections the stage may hold, all containers together. */
  budget: number;
  /** Replica set members: every container holds one monitoring connection to each. */
  replicaSetMembers: number;
  /** The queue feeds the worker at most this many invocations at once. */
  workerMaxConcurrency: number;
  /**
   * Whether a schedule also invokes the worker (the turn recovery and approvals sweeps): it gets a
   * container of its own, since a sweep in one the queue's poller counts on would throttle the
   * poller, and a throttled receive counts toward the dead-letter queue.
   */
  scheduledSweep: boolean;
  /** Event streams the streaming function serves at once (each holds a container for the stream's length). */
  streamConcurrency: number;
  /** Containers of each webhook. Default: {@link DEFAULT_WEBHOOK_CONCURRENCY}. */
  webhookConcurrency?: number;
}

export interface ConnectionPlan {
  /** Reserved concurrency per function: the most containers it can run. */
  reservedConcurrency: Record<FunctionName, number>;
  /** Connections one container holds at most: its pool and a monitor per member. */
  connectionsPerContainer: Record<FunctionName, number>;
  /** Connections the whole stage holds at most, within the budget. */
  total: number;
}

/**
 * Splits the stage's connection budget into reserved concurrency: the worker gets what the queue
 * may feed it (and one more for the scheduled sweeps), each webhook {@link DEFAULT_WEBHOOK_CONCURRENCY}, the setup function one, the
 * streaming function the stage's `streamConcurrency`, and the api the rest. A budget that leaves the api nothing is refused at synth.
 */
export function planConnections(input: ConnectionBudgetInput): ConnectionPlan {
  const connectionsPerContainer = Object.fromEntries(FUNCTION_NAMES.map((name) => [name, FUNCTION_POOL_SIZES[name] + input.replicaSetMembers])) as Record<
    FunctionName,
    number
  >;
  const fixed = {
    worker: input.workerMaxConcurrency + (input.scheduledSweep ? 1 : 0),
    slack: input.webhookConcurrency ?? DEFAULT_WEBHOOK_CONCURRENCY,
    teams: input.webhookConcurrency ?? DEFAULT_WEBHOOK_CONCURRENCY,
    setup: 1,
    stream: input.streamConcurrency,
  };
  const fixedConnections = Object.entries(fixed).reduce((sum, [name, containers]) => sum + containers * connectionsPerContainer[name as FunctionName], 0);
  const api = Math.floor((input.budget - fixedConnections) / connectionsPerContainer.api);
  if (api < 1) {
    const needed = fixedConnections + connectionsPerContainer.api;
    throw new ValidationError("invalid CDK context", [
      {
        path: "mongodbConnectionBudget",
        message:
          `at least ${needed} connections are needed (worker, webhooks, setup and stream take ${fixedConnections}, one api ` +
          `container ${connectionsPerContainer.api})`,
      },
    ]);
  }
  const reservedConcurrency = { ...fixed, api };
  const total = FUNCTION_NAMES.reduce((sum, name) => sum + reservedConcurrency[name] * connectionsPerContainer[name], 0);
  return { reservedConcurrency, connectionsPerContainer, total };
}
