/**
 * Bedrock's prompt cache as documented for Claude (Bedrock user guide, "Prompt caching"), for the local
 * Converse endpoint: a request's cache points each close a prefix (tools, then system, then messages);
 * a point is cached only when its prefix is at least `minTokensPerCheckpoint` model tokens longer
 * than the previous cached point's (1,024 for Claude Sonnet: the first point after 1,024 tokens, the
 * second after 2,048); the longest prefix still cached is read, the points after it are written; an
 * entry lives for its TTL after it was last written or read. As Claude does on Bedrock, each point
 * also looks back over the content blocks before it (`DEFAULT_LOOKBACK_BLOCKS`) for a prefix an
 * earlier request cached at one of their boundaries.
 */

export type CacheTtl = "5m" | "1h";

/** Claude Sonnet's minimum (Bedrock user guide). */
export const DEFAULT_MIN_TOKENS_PER_CHECKPOINT = 1_024;

/** Content blocks before a point where Claude looks for a shorter cached prefix ("about 20", Bedrock user guide). */
export const DEFAULT_LOOKBACK_BLOCKS = 20;

export const TTL_MS: Record<CacheTtl, number> = { "5m": 5 * 60_000, "1h": 60 * 60_000 };

/** A prefix of a request: its model tokens and a key for its content (a hash of everything in it). */
export interface Prefix {
  tokens: number;
  key: string;
}

/** One cache point of a request: the prefix it closes. */
export interface PrefixPoint extends Prefix {
  ttl: CacheTtl;
  /** The prefixes ending at the content-block boundaries before the point, nearest first. */
  earlier?: Prefix[];
}

/** What a request read and wrote, as Bedrock reports it in `usage`. */
export interface CacheUsage {
  cacheReadInputTokens: number;
  cacheWriteInputTokens: number;
  /** Written tokens by TTL, as Bedrock's `cacheDetails`. */
  cacheDetails: { ttl: CacheTtl; inputTokens: number }[];
}

export interface PromptCacheOptions {
  /** Default: `DEFAULT_MIN_TOKENS_PER_CHECKPOINT`. */
  minTokensPerCheckpoint?: number;
  /** Default: `DEFAULT_LOOKBACK_BLOCKS`; 0 reads only at the request's points. */
  lookbackBlocks?: number;
  /** Milliseconds since the epoch; tests pass a clock they move. Default: `Date.now`. */
  now?: () => number;
}

export class PromptCache {
  private readonly entries = new Map<string, { expiresAt: number; ttl: CacheTtl }>();
  private readonly minTokens: number;
  private readonly lookback: number;
  private readonly now: () => number;

  constructor(options: PromptCacheOptions = {}) {
    this.minTokens = options.minTokensPerCheckpoint ?? DEFAULT_MIN_TOKENS_PER_CHECKPOINT;
    this.lookback = options.lookbackBlocks ?? DEFAULT_LOOKBACK_BLOCKS;
    this.now = options.now ?? Date.now;
  }

  /** Reads and writes the cache for one request's points (in request order); `scope` is the model id. */
  use(scope: string, points: readonly PrefixPoint[]): CacheUsage {
    const now = this.now();
    const cached: PrefixPoint[] = [];
    let last = 0;
    for (const point of points) {
      if (point.tokens - last < this.minTokens) continue;
      cached.push(point);
      last = point.tokens;
    }
    let hit: { tokens: number; entry: { expiresAt: number; ttl: CacheTtl } } | undefined;
    for (const point of points) {
      for (const prefix of [point, ...(point.earlier ?? []).slice(0, this.lookback)]) {
        const entry = this.entries.get(`${scope}\u0000${prefix.key}`);
        if (entry && entry.expiresAt > now && prefix.tokens > (hit?.tokens ?? 0)) hit = { tokens: prefix.tokens, entry };
      }
    }
    // A hit starts the entry's TTL again.
    if (hit) hit.entry.expiresAt = now + TTL_MS[hit.entry.ttl];
    const read = hit?.tokens ?? 0;
    const written = new Map<CacheTtl, number>();
    let from = read;
    for (const point of cached.filter((p) => p.tokens > read)) {
      this.entries.set(`${scope}\u0000${point.key}`, { expiresAt: now + TTL_MS[point.ttl], ttl: point.ttl });
      written.set(point.ttl, (written.get(point.ttl) ?? 0) + point.tokens - from);
      from = point.tokens;
    }
    this.evictExpired(now);
    return {
      cacheReadInputTokens: read,
      cacheWriteInputTokens: from - read,
      cacheDetails: [...written].map(([ttl, inputTokens]) => ({ ttl, inputTokens })),
    };
  }

  private evictExpired(now: number): void {
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}
