import { ValidationError } from "../lib/errors.js";

/** Geography prefixes of Bedrock system-defined (cross-region) inference profile ids. */
const INFERENCE_PROFILE_PREFIX = /^(us|us-gov|eu|apac|jp|au|ca|global)\.(.+)$/;
const BEDROCK_ARN = /^arn:[a-z-]+:bedrock:[a-z0-9-]*:\d*:(foundation-model|inference-profile|application-inference-profile)\/(.+)$/;

export interface BedrockArnContext {
  partition: string;
  region: string;
  account: string;
}

/**
 * The IAM resources a caller of `modelId` needs for bedrock:InvokeModel*, and nothing wider.
 *
 * - foundation model id → that model in this region;
 * - cross-region inference profile id (`us.…`, `eu.…`, `global.…`) or its ARN → the profile, plus
 *   the foundation model in every region (`*`): the profile routes each request to a region of
 *   its geography that AWS chooses, and IAM checks the model ARN of that region;
 * - application inference profile ARN → the profile, plus `foundationModelId` in every region,
 *   which must be given because the ARN does not name the model.
 */
export function bedrockResourceArns(modelId: string, ctx: BedrockArnContext, foundationModelId?: string): string[] {
  const anyRegionModel = (id: string) => `arn:${ctx.partition}:bedrock:*::foundation-model/${id}`;
  const arn = BEDROCK_ARN.exec(modelId);
  if (arn) {
    const [, kind, id] = arn;
    if (kind === "foundation-model") return [modelId];
    if (kind === "inference-profile") {
      const profile = INFERENCE_PROFILE_PREFIX.exec(id);
      return [modelId, anyRegionModel(foundationModelId ?? profile?.[2] ?? id)];
    }
    if (!foundationModelId) {
      throw new ValidationError("an application inference profile needs its foundation model id", [
        { path: "bedrockFoundationModelId", message: "required when bedrockModelId is an application inference profile ARN" },
      ]);
    }
    return [modelId, anyRegionModel(foundationModelId)];
  }
  if (modelId.startsWith("arn:")) {
    throw new ValidationError("not a Bedrock model or inference profile ARN", [{ path: "bedrockModelId", message: modelId }]);
  }
  const profile = INFERENCE_PROFILE_PREFIX.exec(modelId);
  if (profile) {
    return [`arn:${ctx.partition}:bedrock:${ctx.region}:${ctx.account}:inference-profile/${modelId}`, anyRegionModel(foundationModelId ?? profile[2])];
  }
  return [`arn:${ctx.partition}:bedrock:${ctx.region}::foundation-model/${modelId}`];
}
