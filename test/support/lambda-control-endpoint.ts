import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface LambdaControlEndpoint {
  url: string;
  /** What GetAccountSettings answers as `AccountLimit`. */
  setAccount(limit: { concurrentExecutions: number; unreservedConcurrentExecutions: number }): void;
  /** Reserved concurrency of deployed functions, by name; a function not named does not exist. */
  setReservations(reservations: Record<string, number>): void;
  /** Environments of deployed functions, by name, for GetFunctionConfiguration; a function not named does not exist. */
  setEnvironments(environments: Record<string, Record<string, string>>): void;
  close(): Promise<void>;
}

/**
 * A stand-in for the Lambda API's GetAccountSettings (`GET /2016-08-19/account-settings`) and
 * GetFunctionConcurrency (`GET /2019-09-30/functions/{name}/concurrency`) and GetFunctionConfiguration
 * (`GET /2015-03-31/functions/{name}/configuration`, its environment only), REST-JSON as the AWS
 * SDK's LambdaClient calls them; an unknown function is Lambda's 404 ResourceNotFoundException.
 */
export async function startLambdaControlEndpoint(): Promise<LambdaControlEndpoint> {
  let account = { concurrentExecutions: 1000, unreservedConcurrentExecutions: 1000 };
  let reservations: Record<string, number> = {};
  let environments: Record<string, Record<string, string>> = {};
  const server: Server = createServer((request, response) => {
    const reply = (status: number, body: unknown, errorType?: string) => {
      response.writeHead(status, { "content-type": "application/json", ...(errorType && { "x-amzn-errortype": errorType }) });
      response.end(JSON.stringify(body));
    };
    if (!String(request.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 "))
      return reply(403, { message: "Missing Authentication Token" }, "AccessDeniedException");
    const url = request.url ?? "";
    if (request.method === "GET" && url.startsWith("/2016-08-19/account-settings")) {
      return reply(200, {
        AccountLimit: {
          ConcurrentExecutions: account.concurrentExecutions,
          UnreservedConcurrentExecutions: account.unreservedConcurrentExecutions,
          CodeSizeUnzipped: 262144000,
          CodeSizeZipped: 52428800,
          TotalCodeSize: 80530636800,
        },
        AccountUsage: { FunctionCount: Object.keys(reservations).length, TotalCodeSize: 0 },
      });
    }
    const concurrency = /^\/2019-09-30\/functions\/([^/?]+)\/concurrency/.exec(url);
    if (request.method === "GET" && concurrency) {
      const name = decodeURIComponent(concurrency[1]);
      if (!(name in reservations)) return reply(404, { Type: "User", Message: `Function not found: ${name}` }, "ResourceNotFoundException");
      return reply(200, { ReservedConcurrentExecutions: reservations[name] });
    }
    const configuration = /^\/2015-03-31\/functions\/([^/?]+)\/configuration/.exec(url);
    if (request.method === "GET" && configuration) {
      const name = decodeURIComponent(configuration[1]);
      if (!(name in environments)) return reply(404, { Type: "User", Message: `Function not found: ${name}` }, "ResourceNotFoundException");
      return reply(200, { FunctionName: name, Environment: { Variables: environments[name] } });
    }
    reply(404, { message: `No operation at ${request.method} ${url}` }, "UnknownOperationException");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setAccount: (next) => void (account = next),
    setReservations: (next) => void (reservations = next),
    setEnvironments: (next) => void (environments = next),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
