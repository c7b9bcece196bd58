// Stands in for zod 4's `locales/index.js` in the Lambda bundles. `import { z } from "zod"` makes
// esbuild keep the whole `z` namespace, and with it `z.locales`: error messages in some 50
// languages (~260 KB minified) that nothing here selects. Zod registers English itself (its
// schemas import `locales/en.js` directly), so English is all `z.locales` offers in a bundle.
export { default as en } from "zod/v4/locales/en.js";
