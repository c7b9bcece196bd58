import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One AssumeRole the stand-in answered: the role, the session's name and tags, and the access key it issued. */
export interface AssumedSession {
  roleArn: string;
  sessionName: string;
  tags: Record<string, string>;
  accessKeyId: string;
  /** The access key that signed the AssumeRole request (the function's own). */
  signedBy: string;
}

export interface StsEndpoint {
  url: string;
  sessions: AssumedSession[];
  /** The session an access key was issued for, if it was. */
  sessionOf(accessKeyId: string): AssumedSession | undefined;
  close(): Promise<void>;
}

const xml = (value: string) => value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "text/xml" });
  res.end(body);
}

function error(res: ServerResponse, status: number, code: string, message: string): void {
  send(
    res,
    status,
    `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code>` +
      `<Message>${xml(message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
  );
}

/**
 * A local AWS STS speaking its Query protocol (form-encoded `Action=AssumeRole`, XML answers), as
 * the SDK's STS client does: it issues temporary credentials for the roles it knows, records each
 * session's name and tags (`Tags.member.N.Key/Value`), and refuses an unknown role
 * (AccessDenied), a request not signed with SigV4, and session tags outside STS's character rules.
 */
export async function startStsEndpoint(roleArns: readonly string[]): Promise<StsEndpoint> {
  const sessions: AssumedSession[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
    const signedBy = /Credential=([^/]+)\//.exec(req.headers.authorization ?? "")?.[1];
    if (!signedBy) return error(res, 403, "MissingAuthenticationToken", "Request is missing Authentication Token");
    if (form.get("Action") !== "AssumeRole") return error(res, 400, "InvalidAction", `Could not find operation ${form.get("Action")}`);
    const roleArn = form.get("RoleArn") ?? "";
    if (!roleArns.includes(roleArn)) return error(res, 403, "AccessDenied", `User is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`);
    const tags: Record<string, string> = {};
    for (let i = 1; form.has(`Tags.member.${i}.Key`); i++) {
      const value = form.get(`Tags.member.${i}.Value`) ?? "";
      if (!/^[\p{L}\p{Z}\p{N}_.:/=+\-@]{0,256}$/u.test(value)) return error(res, 400, "ValidationError", "1 validation error detected: tag value");
      tags[form.get(`Tags.member.${i}.Key`)!] = value;
    }
    const sessionName = form.get("RoleSessionName") ?? "";
    if (!/^[\w+=,.@-]{2,64}$/.test(sessionName)) return error(res, 400, "ValidationError", "1 validation error detected: roleSessionName");
    const accessKeyId = `ASIA${randomBytes(8).toString("hex").toUpperCase()}`;
    sessions.push({ roleArn, sessionName, tags, accessKeyId, signedBy });
    const assumedArn = `${roleArn.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/")}/${sessionName}`;
    const expiration = new Date(Date.now() + Number(form.get("DurationSeconds") ?? 3600) * 1000).toISOString();
    send(
      res,
      200,
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>` +
        `<AccessKeyId>${accessKeyId}</AccessKeyId><SecretAccessKey>${randomBytes(20).toString("base64")}</SecretAccessKey>` +
        `<SessionToken>${randomBytes(32).toString("base64")}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
        `<AssumedRoleUser><AssumedRoleId>AROA0000:${xml(sessionName)}</AssumedRoleId><Arn>${xml(assumedArn)}</Arn></AssumedRoleUser>` +
        `</AssumeRoleResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></AssumeRoleResponse>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sessions,
    sessionOf: (accessKeyId) => sessions.find((s) => s.accessKeyId === accessKeyId),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
