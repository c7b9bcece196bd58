export { ClearFieldCipher, CLEAR_FIELDS } from "./clear-field-cipher.js";
export { CIPHERTEXT_SUBTYPE, ciphertextOf, contentRefused, isCiphertext, type ContentCipher, type FieldRef, type StoredContent } from "./content-cipher.js";
export {
  FieldCipher,
  CONTENT_SUITE,
  CONTEXT_COLLECTION,
  CONTEXT_TENANT,
  DEFAULT_DATA_KEY_CACHE_ENTRIES,
  DEFAULT_DATA_KEY_MAX_AGE_MS,
  DEFAULT_DATA_KEY_MAX_BYTES,
  DEFAULT_DATA_KEY_MAX_MESSAGES,
  type FieldCipherOptions,
} from "./field-cipher.js";
export {
  CONTENT_KEYS_COLLECTION,
  tenantKey,
  type ShredReceipt,
  type TenantCurrentKey,
  type TenantKeyrings,
  type TenantKeys,
  type TenantRef,
} from "./tenant-keys.js";
export { LocalTenantKeys, LOCAL_CONTENT_KEYS_DIR, LOCAL_KEY_NAMESPACE } from "./local-tenant-keys.js";
export {
  KmsTenantKeys,
  DEFAULT_KEY_DELETION_WINDOW_DAYS,
  DEPLOYMENT_KEY_TAG,
  TENANT_KEY_TAG,
  type ContentKeyDocument,
  type KmsTenantKeysOptions,
} from "./kms-tenant-keys.js";
export { createTenantKeys, type TenantKeysParts } from "./create-tenant-keys.js";
