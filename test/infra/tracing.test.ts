import { readStageConfig } from "../../infra/stage-config.js";
import { ADOT_EXEC_WRAPPER } from "../../infra/constructs/threadwise-function.js";
import { App } from "aws-cdk-lib";
import { synthTemplate } from "./synth.js";

/** An ADOT Node.js layer version ARN of the arm64 functions' region (any well-formed one: the stack never resolves it). */
const LAYER_ARN = "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-nodejs-arm64-ver-1-30-2:1";
const FUNCTIONS = ["api", "worker", "stream", "slack", "teams", "setup"];

type Fn = { Properties: { FunctionName: string; Layers?: unknown[]; Environment: { Variables: Record<string, unknown> } } };
const functionsOf = (template: ReturnType<typeof synthTemplate>) => Object.values(template.findResources("AWS::Lambda::Function")) as Fn[];
const ours = (fns: Fn[]) => fns.filter((f) => typeof f.Properties.FunctionName === "string" && f.Properties.FunctionName.startsWith("dev-threadwise-"));

describe("ThreadwiseStack tracing", () => {
  describe("by default (tracing=xray)", () => {
    it("adds no layer and no exec wrapper, and keeps Powertools' X-Ray segments", () => {
      const fns = ours(functionsOf(synthTemplate()));
      expect(fns.map((f) => f.Properties.FunctionName.replace("dev-threadwise-", "")).sort()).toEqual([...FUNCTIONS].sort());
      for (const fn of fns) {
        expect(fn.Properties.Layers).toBeUndefined();
        expect(fn.Properties.Environment.Variables.AWS_LAMBDA_EXEC_WRAPPER).toBeUndefined();
        expect(fn.Properties.Environment.Variables.POWERTOOLS_TRACE_ENABLED).toBeUndefined();
      }
    });
  });

  describe("with tracing=adot", () => {
    it("gives every function the ADOT layer and its exec wrapper, and turns Powertools' segments off", () => {
      const fns = ours(functionsOf(synthTemplate({ context: { tracing: "adot", adotLayerArn: LAYER_ARN } })));
      expect(fns).toHaveLength(FUNCTIONS.length);
      for (const fn of fns) {
        expect(fn.Properties.Layers).toEqual([LAYER_ARN]);
        expect(fn.Properties.Environment.Variables).toMatchObject({ AWS_LAMBDA_EXEC_WRAPPER: ADOT_EXEC_WRAPPER, POWERTOOLS_TRACE_ENABLED: "false" });
      }
    });

    it("throws at synth without adotLayerArn, naming the key", () => {
      const app = new App({ context: { tracing: "adot" } });
      expect(() => readStageConfig(app.node)).toThrow(expect.objectContaining({ details: [expect.objectContaining({ path: "adotLayerArn" })] }));
    });

    it("throws when adotLayerArn is set without tracing=adot, or is no layer version ARN", () => {
      expect(() => readStageConfig(new App({ context: { adotLayerArn: LAYER_ARN } }).node)).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "adotLayerArn", message: "needs tracing=adot" })] }),
      );
      expect(() => readStageConfig(new App({ context: { tracing: "adot", adotLayerArn: "aws-otel-nodejs" } }).node)).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "adotLayerArn" })] }),
      );
    });
  });
});
