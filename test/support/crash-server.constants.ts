/** Where the crash server's tools record each run of an effect. */
export const EFFECTS_COLLECTION = "crash_effects";
/** The role that may approve `approved_effect`. */
export const APPROVER_ROLE = "manager";
