import { createHash } from "node:crypto";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";

/** Digest of the empty list: where every list's digest chain starts. */
export const EMPTY_LIST_DIGEST = "0".repeat(64);

/** One list item as the serializer wrote it. */
export interface SerializedItem {
  type: string;
  bytes: Uint8Array;
}

/** The newest link of a stored list version: a new version of the list may extend it. */
export interface ListHead {
  key: string;
  count: number;
  digest: string;
  /** Keys of the links before it, nearest first (at most {@link CHAIN_KEYS}); migration 003 gave links of earlier releases theirs. */
  chain?: string[];
}

/**
 * Keys of its nearest ancestors each link names (`chain`), so that a reader fetches a list's
 * links by key, this many per round trip, instead of every link of the channel.
 */
export const CHAIN_KEYS = 32;

/** One link to store: the items it adds to its base, and the count and digest of the list up to it. */
export interface PlannedLink {
  key: string;
  base?: string;
  count: number;
  digest: string;
  /** Keys of the links before it, nearest first (see {@link CHAIN_KEYS}). */
  chain: string[];
  items: SerializedItem[];
}

export async function serializeItems(serde: SerializerProtocol, items: unknown[]): Promise<SerializedItem[]> {
  return Promise.all(
    items.map(async (item) => {
      const [type, bytes] = await serde.dumpsTyped(item);
      return { type, bytes };
    }),
  );
}

/**
 * The digest of each prefix of the list: entry `k` covers items `0..k`. Chained, so a stored
 * version's digest tells whether a new list starts with exactly that version's items.
 */
export function prefixDigests(items: SerializedItem[]): string[] {
  const digests: string[] = [];
  let previous = EMPTY_LIST_DIGEST;
  for (const item of items) {
    previous = nextDigest(previous, item);
    digests.push(previous);
  }
  return digests;
}

/** The digest of a list whose items before `item` have the digest `previous`. */
export function nextDigest(previous: string, { type, bytes }: SerializedItem): string {
  return createHash("sha256").update(previous).update(type).update("\0").update(bytes).digest("hex");
}

/** Items grouped greedily into links of at most `linkBytes` (an item larger than that alone); at least one group. */
export function groupItems(items: SerializedItem[], linkBytes: number): SerializedItem[][] {
  const groups: SerializedItem[][] = [];
  let current: SerializedItem[] = [];
  let bytes = 0;
  for (const item of items) {
    if (current.length > 0 && bytes + item.bytes.byteLength > linkBytes) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.bytes.byteLength;
  }
  if (current.length > 0 || groups.length === 0) groups.push(current);
  return groups;
}

/**
 * Plans the links that store `items` as version `key`. When the list starts with the items of
 * `base` (same count prefix, same digest), only the items after it are stored, in links that
 * build on it; otherwise the whole list is stored. Items are grouped greedily into links of at
 * most `linkBytes` serialized bytes; an item larger than that gets a link of its own. The last
 * link has the version's key, earlier ones `<key>#<n>`. An unchanged list still gets one (empty)
 * link, so every version has a document of its own.
 */
export function planLinks(key: string, items: SerializedItem[], digests: string[], base: ListHead | undefined, linkBytes: number): PlannedLink[] {
  const extendsBase = base !== undefined && base.count > 0 && base.count <= items.length && digests[base.count - 1] === base.digest;
  const start = extendsBase ? base.count : 0;
  const groups = groupItems(items.slice(start), linkBytes);
  const links: PlannedLink[] = [];
  let previous = extendsBase ? base.key : undefined;
  let chain = extendsBase ? [base.key, ...(base.chain ?? [])].slice(0, CHAIN_KEYS) : [];
  let count = start;
  groups.forEach((group, i) => {
    count += group.length;
    const linkKey = i === groups.length - 1 ? key : `${key}#${i}`;
    links.push({ key: linkKey, base: previous, count, digest: count === 0 ? EMPTY_LIST_DIGEST : digests[count - 1], chain, items: group });
    previous = linkKey;
    chain = [linkKey, ...chain].slice(0, CHAIN_KEYS);
  });
  return links;
}
