import { enforceNodeVersion } from "./node-version.js";

// Checked before anything else loads: on an old Node the imports themselves would crash.
enforceNodeVersion();
await import("./serve.js");
