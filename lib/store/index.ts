export { COLLECTIONS, type CollectionName } from "./collections.js";
export { ThreadwiseDatabase, DatabaseSetupError, DATABASE_SETUP_VERSION, type ThreadwiseDatabaseOptions } from "./database.js";
export {
  createMongoClient,
  DEFAULT_CONNECT_TIMEOUT_MS,
  type MongoClientOptions,
} from "./mongo-client.js";
export {
  ConversationStore,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  toSummary,
  type ChannelBinding,
  type ChannelName,
  type ConversationDocument,
  type ConversationPage,
  type ConversationSummary,
  type Lease,
} from "./conversation-store.js";
export { MessageStore, type MessageDocument, type RecordedMessage, type RecordRole } from "./message-store.js";
export {
  TurnStore,
  TURN_STATUSES,
  type ClaimedTurn,
  type TurnDocument,
  type TurnError,
  type TurnProgress,
  type TurnStatus,
  type TurnWithCalls,
} from "./turn-store.js";
export {
  ZERO_USAGE,
  addUsage,
  summarizeContext,
  toViewMessages,
  type ModelCallRecord,
  type TurnContextSummary,
  type Usage,
  type ViewMessage,
} from "./turn-record.js";
export {
  ENDED_TURN_STATUSES,
  FINAL_TURN_STATUSES,
  HELD_TURN_STATUSES,
  TURN_FAILURE_CODES,
  type TurnFailureCode,
  TURN_TRANSITIONS,
  hasEnded,
  isLegalTransition,
  statusesBefore,
  type TurnTransition,
} from "./turn-lifecycle.js";
export { ConversationLease, MAX_RETRY_AFTER_S, type ConversationLeaseOptions } from "./lease.js";
export { WriteFence, type FencedDocument } from "./write-fence.js";
export { RetentionPolicy, type RetentionOptions } from "./retention.js";
export {
  ArtifactStore,
  DEFAULT_ARTIFACT_PART_BYTES,
  DEFAULT_MAX_ARTIFACT_BYTES,
  DEFAULT_PREVIEW_CHARS,
  previewOf,
  type ArtifactRef,
  type ArtifactStoreOptions,
  type NewArtifact,
  type StoredArtifact,
} from "./artifact-store.js";
export { IdempotencyPersistenceLayer, type IdempotencyDocument, type IdempotencyPersistenceLayerOptions } from "./idempotency-persistence-layer.js";
export {
  ThreadwiseSaver,
  DEFAULT_CHECKPOINTS_COLLECTION,
  DEFAULT_CHECKPOINT_WRITES_COLLECTION,
  DEFAULT_CHECKPOINT_BLOBS_COLLECTION,
  DEFAULT_CHECKPOINT_THREADS_COLLECTION,
  type PruneOptions,
  type PruneResult,
  type ThreadwiseSaverOptions,
} from "./threadwise-saver.js";
export { DEFAULT_MAX_DOCUMENT_BYTES, MONGODB_MAX_DOCUMENT_BYTES } from "./checkpoint/document-size.js";
export { DEFAULT_LIST_LINK_BYTES } from "./checkpoint/channel-blob-store.js";
export {
  RecallIndexStore,
  DEFAULT_RECALL_SEGMENT_TURNS,
  type RecallEntry,
  type RecallIndexStoreOptions,
  type RecallToolOutput,
  type RecallTurnDocument,
  type RecallWatermark,
} from "./recall-index-store.js";
export {
  ContentResealer,
  DEFAULT_RESEAL_BATCH_SIZE,
  DEFAULT_RESEAL_LEASE_MS,
  type ContentResealerOptions,
  type ResealBatch,
  type ResealCursor,
  type ResealJobDocument,
  type ResealOutcome,
  type ResealPass,
  type ResealRunOptions,
  type ResealWalker,
} from "./content-resealer.js";
export { CollectionResealWalker, type ResealedCollection } from "./collection-reseal-walker.js";
