import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { CLEAR_DIGESTS, type Digests } from "./checkpoint-contents.js";
import { EMPTY_LIST_DIGEST, type SerializedItem } from "./list-links.js";

/** What the codec remembers of a list item object: its bytes, and where it sits in the last list it was stored or read in. */
interface Remembered extends SerializedItem {
  /** The item's `id` when it was remembered: LangGraph's message reducer gives a message without one an id in place. */
  id: unknown;
  /** The digest of the list before the item, and up to it (see `prefixDigests`). */
  before?: string;
  after?: string;
  /** The digests `before` and `after` were made with (a tenant's key, or plain SHA-256). */
  by?: Digests;
}

const idOf = (item: object): unknown => (item as { id?: unknown }).id;

/**
 * Serializes and loads the items of list channels (the message list) so that an item stored,
 * loaded and stored again is the same bytes, and so that a put does not serialize or hash the
 * history again.
 *
 * - An item object this codec loaded or serialized is remembered (weakly: the object's lifetime
 *   bounds the entry) with its bytes; storing the same object again reuses them. An item whose
 *   `id` changed since is serialized anew.
 * - A new item is serialized canonically: dumped, loaded and dumped again. LangChain's message
 *   classes do not read back exactly as they were built (an `AIMessage` built with
 *   `name: undefined`, as `ChatBedrockConverse` builds them, serializes that field as
 *   `{"lc":2,"type":"undefined"}`, and loads without it; chunks reorder their fields), so the
 *   bytes of a value as it will be read back are the ones worth storing.
 * - Each remembered item also keeps the digests of the list before and up to it; the digests of a
 *   list whose items were remembered in that order are read off them, not computed.
 *
 * Items must not be changed in place once stored (LangGraph's contract for state values), apart
 * from the reducer's id assignment, which is detected.
 */
export class ItemCodec {
  private readonly known = new WeakMap<object, Remembered>();

  constructor(private readonly serde: SerializerProtocol) {}

  /** The item's stored bytes: remembered, or its canonical serialization. */
  async serialize(item: unknown): Promise<SerializedItem> {
    const remembered = this.recall(item);
    if (remembered !== undefined) return remembered;
    const [firstType, first] = await this.serde.dumpsTyped(item);
    let serialized: SerializedItem = { type: firstType, bytes: first };
    if (firstType === "json") {
      const [type, bytes] = await this.serde.dumpsTyped(await this.serde.loadsTyped(firstType, first));
      serialized = { type, bytes };
    }
    this.remember(item, serialized);
    return serialized;
  }

  /** Loads a stored item and remembers its bytes (copied: they may be a view of a whole driver buffer). */
  async load(type: string, bytes: Uint8Array): Promise<unknown> {
    const item = await this.serde.loadsTyped(type, bytes);
    this.remember(item, { type, bytes: bytes.slice() });
    return item;
  }

  /**
   * The prefix digests of a list (entry `k` covers items `0..k`), read off what is remembered of
   * each item where the list holds remembered items in the order they were remembered in, and
   * hashed (then remembered) from the first item where it does not. `by`: the thread's digests
   * (see `CheckpointContents.digests`); what was remembered under others is hashed again.
   */
  digests(items: unknown[], serialized: SerializedItem[], by: Digests = CLEAR_DIGESTS): string[] {
    const digests: string[] = new Array(items.length);
    let previous = EMPTY_LIST_DIGEST;
    for (let i = 0; i < items.length; i += 1) {
      const remembered = this.recall(items[i]);
      let digest: string;
      if (remembered !== undefined && remembered.by === by && remembered.before === previous && remembered.after !== undefined) digest = remembered.after;
      else {
        digest = by.next(previous, serialized[i]);
        if (remembered !== undefined) {
          remembered.before = previous;
          remembered.after = digest;
          remembered.by = by;
        }
      }
      digests[i] = digest;
      previous = digest;
    }
    return digests;
  }

  private recall(item: unknown): Remembered | undefined {
    if (item === null || typeof item !== "object") return undefined;
    const remembered = this.known.get(item);
    return remembered !== undefined && remembered.id === idOf(item) ? remembered : undefined;
  }

  private remember(item: unknown, serialized: SerializedItem): void {
    if (item === null || typeof item !== "object") return;
    this.known.set(item, { ...serialized, id: idOf(item) });
  }
}
