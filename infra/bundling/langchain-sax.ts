// Stands in for the SAX parser @langchain/core vendors (`utils/sax-js/sax.js`, ~19 KB minified) in
// the Lambda bundles. Its only user is XMLOutputParser, which nothing here uses; it is bundled
// because the output-parser index that structured output imports re-exports every parser.
export const sax = {
  parser(): never {
    throw new Error("LangChain's XML output parser is not bundled in the Lambda functions");
  },
};
