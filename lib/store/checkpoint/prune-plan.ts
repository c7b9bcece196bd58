/**
 * Metadata sources of a root checkpoint that starts a run: `input` (each `invoke` with input,
 * i.e. each turn), `update` (`updateState`) and `fork` (a run from an older checkpoint).
 */
export const RUN_START_SOURCES: readonly string[] = ["input", "update", "fork"];

/** What prune needs to know of a visible checkpoint header. */
export interface PruneCandidate {
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id?: string;
  source?: string;
  /** Checkpoint metadata `parents`: namespace → checkpoint of the graph that ran this subgraph. */
  parents?: Record<string, string>;
  /**
   * Whether LangGraph rebuilds a channel of this checkpoint from the writes of the steps before it
   * (a `DeltaChannel`, beta: metadata `delta_writes_versioned` or `counters_since_delta_snapshot`).
   */
  replaysWrites?: boolean;
}

/**
 * What a prune that examines only part of a thread (see `ThreadwiseSaver.prune`) knows of the root
 * checkpoints it did not examine. Every root checkpoint it did not examine is kept.
 */
export interface PruneContext {
  /** Root checkpoints named as parent by one it did not examine: not branch tips. */
  parentsElsewhere: Set<string>;
  /** Whether one it did not examine replays writes: the root namespace keeps everything. */
  rootReplaysWrites: boolean;
  /** Root checkpoints it did not examine that exist: owners of subgraph namespaces that stay. */
  keptElsewhere: Set<string>;
}

export interface PrunePlan {
  /** Headers to remove, by namespace. */
  drop: Map<string, string[]>;
  /** Subgraph namespaces whose run has finished: every document of them goes. */
  finished: Set<string>;
}

/**
 * Which checkpoints of one thread prune keeps (pure).
 *
 * Root namespace: the latest `keepLatest`; every checkpoint that starts a run
 * ({@link RUN_START_SOURCES}): it holds the state the run started from (the previous turn's end)
 * and the run's input, so each turn can be read as it began, replayed (`invoke(null, config)`) or
 * forked with another input; and every branch tip (a checkpoint no other one names as its
 * parent), so a fork never loses the branch it left. Everything else is a step inside a run that
 * a later checkpoint of the same run supersedes.
 *
 * A namespace where LangGraph rebuilds a channel from earlier steps' writes (`replaysWrites`) keeps
 * every checkpoint.
 *
 * Subgraph namespaces: a namespace belongs to the root checkpoint whose step ran the subgraph
 * (see {@link ownerOf}; LangGraph derives the namespace from that checkpoint's id). While that
 * root checkpoint is kept, the namespace keeps its latest `keepLatest`: it is the subgraph state
 * `getState(config, { subgraphs: true })` shows for it, and a subgraph still running or
 * interrupted is under the latest root checkpoint. Any other namespace can no longer be reached
 * and is removed whole.
 */
export function planPrune(headers: PruneCandidate[], keepLatest: number, context?: PruneContext): PrunePlan {
  const byNamespace = new Map<string, PruneCandidate[]>();
  for (const header of headers) {
    const list = byNamespace.get(header.checkpoint_ns) ?? [];
    list.push(header);
    byNamespace.set(header.checkpoint_ns, list);
  }
  for (const list of byNamespace.values()) list.sort((a, b) => (a.checkpoint_id < b.checkpoint_id ? 1 : -1));
  const root = byNamespace.get("") ?? [];
  const keptRoot = keptRootCheckpoints(root, keepLatest, context);
  const plan: PrunePlan = { drop: new Map(), finished: new Set() };
  for (const [ns, list] of byNamespace) {
    if (ns !== "") {
      const owner = ownerOf(list[0], root);
      const ownerKept = owner !== undefined && (keptRoot.has(owner) || (context?.keptElsewhere.has(owner) ?? false));
      // Without the whole root namespace at hand, a namespace whose owner is unknown stays.
      const decided = context === undefined ? root.length > 0 : owner !== undefined;
      if (decided && !ownerKept) {
        plan.finished.add(ns);
        continue;
      }
    }
    // A DeltaChannel value is rebuilt from every earlier checkpoint's writes: none of them may go.
    if (list.some((h) => h.replaysWrites)) continue;
    const kept = ns === "" ? keptRoot : new Set(list.slice(0, keepLatest).map((h) => h.checkpoint_id));
    const drop = list.filter((h) => !kept.has(h.checkpoint_id)).map((h) => h.checkpoint_id);
    if (drop.length > 0) plan.drop.set(ns, drop);
  }
  return plan;
}

/**
 * The root checkpoint a subgraph namespace belongs to, from its newest checkpoint: the one its
 * `parents` names, else (`updateState` on a namespace the subgraph has not run in yet writes no
 * `parents`) the newest root checkpoint written before it, the latest when it was written (ids are
 * time-ordered; `root` is newest first).
 */
function ownerOf(newest: PruneCandidate, root: PruneCandidate[]): string | undefined {
  return newest.parents?.[""] ?? root.find((h) => h.checkpoint_id < newest.checkpoint_id)?.checkpoint_id;
}

/** The root checkpoints kept (`root` newest first): the latest few, every run start and every branch tip. */
function keptRootCheckpoints(root: PruneCandidate[], keepLatest: number, context?: PruneContext): Set<string> {
  if (context?.rootReplaysWrites || root.some((h) => h.replaysWrites)) return new Set(root.map((h) => h.checkpoint_id));
  const kept = new Set(root.slice(0, keepLatest).map((h) => h.checkpoint_id));
  const parents = new Set<string | undefined>([...root.map((h) => h.parent_checkpoint_id), ...(context?.parentsElsewhere ?? [])]);
  for (const header of root) {
    if (!parents.has(header.checkpoint_id)) kept.add(header.checkpoint_id);
    if (header.source !== undefined && RUN_START_SOURCES.includes(header.source)) kept.add(header.checkpoint_id);
  }
  return kept;
}
