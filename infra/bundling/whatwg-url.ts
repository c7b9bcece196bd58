// Stands in for the `whatwg-url` package in the Lambda bundles. Its only user, the driver's
// `mongodb-connection-string-url`, needs a WHATWG URL and URLSearchParams, which Node has built
// in; the package adds ~280 KB (mostly tr46's Unicode tables) to every bundle for nothing.
export const URL = globalThis.URL;
export const URLSearchParams = globalThis.URLSearchParams;
