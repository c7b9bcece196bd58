import type { Migration } from "./migration.js";

/**
 * Holds version 3 for the content-encryption migration being written on another branch, so that
 * 004 runs in order here; replaced by that migration when the branches are merged. Does nothing.
 */
export const reserved: Migration = {
  version: 3,
  name: "reserved",
  async up() {
    return true;
  },
};
