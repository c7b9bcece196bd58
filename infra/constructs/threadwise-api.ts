import { Validations, type RemovalPolicy } from "aws-cdk-lib";
import { AccessLogFormat } from "aws-cdk-lib/aws-apigateway";
import { HttpApi, HttpMethod, type HttpRoute, HttpStage, LogGroupLogDestination } from "aws-cdk-lib/aws-apigatewayv2";
import { HttpJwtAuthorizer } from "aws-cdk-lib/aws-apigatewayv2-authorizers";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { OPERATIONS } from "../../lib/api/openapi.js";

/**
 * The JWT-protected routes, served by the api function: every authenticated operation of the
 * OpenAPI document (`lib/api/openapi.ts`), so a route the router serves cannot be missing here (a
 * test also compares them with the router).
 */
export const AUTHORIZED_ROUTES: readonly { method: HttpMethod; path: string }[] = OPERATIONS.filter((op) => !op.public).map((op) => ({
  method: HttpMethod[op.method.toUpperCase() as "GET" | "POST" | "PUT" | "DELETE" | "PATCH"],
  path: op.path.replace("{conversationId}", "{id}"),
}));

/** Access log fields: who called what and how it went; no bodies, no tokens, no claims. */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: "$context.requestId",
    requestTime: "$context.requestTimeEpoch",
    routeKey: "$context.routeKey",
    status: "$context.status",
    protocol: "$context.protocol",
    sourceIp: "$context.identity.sourceIp",
    responseLength: "$context.responseLength",
    responseLatency: "$context.responseLatency",
    integrationLatency: "$context.integrationLatency",
    integrationStatus: "$context.integrationStatus",
    integrationError: "$context.integrationErrorMessage",
    authorizerError: "$context.authorizer.error",
  }),
);

export interface ThreadwiseApiProps {
  stage: string;
  jwtIssuer: string;
  jwtAudience: string[];
  apiFunction: IFunction;
  slackFunction: IFunction;
  teamsFunction: IFunction;
  logRetention: RetentionDays;
  removalPolicy: RemovalPolicy;
  /** Steady-state requests per second the stage accepts before answering 429, and the burst above it (context `apiThrottleRate`, `apiThrottleBurst`). */
  throttle: { rateLimit: number; burstLimit: number };
}

/**
 * The HTTP API: the /v1 routes behind API Gateway's JWT authorizer, /healthz open, the Slack and
 * Teams webhooks open at the gateway because their callers cannot send our JWTs (each function
 * verifies its platform's signature or token instead), and JSON access logs on the stage.
 */
export class ThreadwiseApi extends Construct {
  readonly httpApi: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;

  constructor(scope: Construct, id: string, props: ThreadwiseApiProps) {
    super(scope, id);
    this.httpApi = new HttpApi(this, "HttpApi", {
      apiName: `${props.stage}-threadwise`,
      description: `Threadwise ${props.stage}`,
      createDefaultStage: false,
    });
    this.accessLogs = new LogGroup(this, "AccessLogs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stage = new HttpStage(this, "DefaultStage", {
      httpApi: this.httpApi,
      stageName: "$default",
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: { destination: new LogGroupLogDestination(this.accessLogs), format: ACCESS_LOG_FORMAT },
    });

    const authorizer = new HttpJwtAuthorizer("JwtAuthorizer", props.jwtIssuer, {
      authorizerName: `${props.stage}-threadwise-jwt`,
      jwtAudience: props.jwtAudience,
      identitySource: ["$request.header.Authorization"],
    });
    const api = new HttpLambdaIntegration("Api", props.apiFunction);
    for (const route of AUTHORIZED_ROUTES) {
      this.httpApi.addRoutes({ path: route.path, methods: [route.method], integration: api, authorizer });
    }

    const slack = new HttpLambdaIntegration("Slack", props.slackFunction);
    const open: { path: string; method: HttpMethod; integration: HttpLambdaIntegration; reason: string }[] = [
      {
        path: "/healthz",
        method: HttpMethod.GET,
        integration: api,
        reason: "Liveness probe by design (docs/api.md: GET /healthz, no auth); it returns no data.",
      },
      {
        path: "/readyz",
        method: HttpMethod.GET,
        integration: api,
        reason: "Readiness probe for monitors that hold no token: it answers only whether the database is reachable and set up, and returns no data.",
      },
      {
        path: "/openapi.json",
        method: HttpMethod.GET,
        integration: api,
        reason: "The API's public description (OpenAPI 3.1), the same for every caller; it holds no data.",
      },
      {
        path: "/v1/mcp/oauth/callback",
        method: HttpMethod.GET,
        integration: api,
        reason:
          "The browser coming back from an MCP server's sign-in carries no JWT; the callback finishes only the pending " +
          "sign-in its state names (stored hashed, single use, expiring), for the user who started it (docs/mcp-oauth.md).",
      },
      {
        path: "/slack/events",
        method: HttpMethod.POST,
        integration: slack,
        reason:
          "Slack cannot send a JWT; the slack function verifies Slack's v0 HMAC request signature over the raw body " +
          "with a five-minute timestamp window before doing anything.",
      },
      {
        path: "/slack/interactivity",
        method: HttpMethod.POST,
        integration: slack,
        reason:
          "Slack's approval button clicks carry no JWT; the slack function verifies them exactly as events (v0 HMAC " +
          "over the raw body, five-minute window) and decides as the clicking user of the owning workspace.",
      },
      {
        path: "/teams/messages",
        method: HttpMethod.POST,
        integration: new HttpLambdaIntegration("Teams", props.teamsFunction),
        reason:
          "The Bot Framework sends its own RS256 JWT (not issued by our issuer); the teams function verifies it " +
          "against the Bot Framework signing keys, issuer, audience and serviceUrl.",
      },
    ];
    for (const route of open) {
      const [created] = this.httpApi.addRoutes({ path: route.path, methods: [route.method], integration: route.integration });
      Validations.of(created as HttpRoute).acknowledge({ id: "AwsSolutions-APIG4", reason: route.reason });
    }
  }
}
