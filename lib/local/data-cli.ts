import { userInfo } from "node:os";
import { AuditLog } from "../audit/audit-log.js";
import { ISSUER_KINDS, type IssuerKind } from "../auth/principal.js";
import { loadConfig, type Config } from "../config/config.js";
import { ValidationError } from "../errors.js";
import type { DataTarget, TenantTarget, UserTarget } from "../lifecycle/data-subject.js";
import { Eraser } from "../lifecycle/eraser.js";
import { KeyRotation, reencryptionView } from "../lifecycle/key-rotation.js";
import { importData, readExport, writeExport } from "../lifecycle/exporter.js";
import { createTenantKeys } from "../crypto/create-tenant-keys.js";
import { databaseFor } from "../setup-database.js";
import { DEFAULT_LOCAL_DIR } from "./local-keys.js";
import { createMongoClient } from "../store/mongo-client.js";
import { parseCliArgs } from "./cli-args.js";
import { explainStartupError } from "./startup-error.js";

const USAGE = [
  "usage: npm run erase -- (--conversation <id> | --issuer <api|slack|teams> [--tenant <tenant>] [--subject <user>])",
  "       npm run data:export -- --issuer <kind> [--tenant <tenant>] [--subject <user>] --out <folder>",
  "       npm run data:import -- --in <folder>",
  "       npm run audit:verify -- [--issuer <kind> --tenant <tenant>]",
  "       npm run keys:rotate -- --issuer <kind> [--tenant <tenant>]",
  "       npm run keys:reencrypt -- --issuer <kind> [--tenant <tenant>]",
  "The database is MONGODB_URI and MONGODB_DB's (docs/data-lifecycle.md).",
].join("\n");

const OPTIONS = {
  conversation: { type: "string" },
  issuer: { type: "string" },
  tenant: { type: "string" },
  subject: { type: "string" },
  out: { type: "string" },
  in: { type: "string" },
} as const;

const mistake = (message: string) => new ValidationError(message, [{ path: "arguments", message }]);

function issuerOf(value: string | undefined): IssuerKind {
  if (!ISSUER_KINDS.includes(value as IssuerKind)) throw mistake(`--issuer must be one of ${ISSUER_KINDS.join(", ")}`);
  return value as IssuerKind;
}

/** The tenant `--issuer` and `--tenant` name (no `--tenant`: the issuer's callers without one). */
function tenantRefOf(v: { issuer?: string; tenant?: string }): { issuer: IssuerKind; tenant: string | null } {
  return { issuer: issuerOf(v.issuer), tenant: v.tenant ?? null };
}

/** The user (with `--subject`) or tenant the options name. */
function subjectTarget(v: { issuer?: string; tenant?: string; subject?: string }): UserTarget | TenantTarget {
  const issuer = issuerOf(v.issuer);
  if (v.subject !== undefined) return { kind: "user", issuer, tenant: v.tenant ?? null, subject: v.subject };
  if (v.tenant === undefined) throw mistake("name a tenant (--tenant), a user (--subject), or both");
  return { kind: "tenant", issuer, tenant: v.tenant };
}

/**
 * `npm run erase`, `npm run data:export`, `npm run data:import`, `npm run audit:verify`,
 * `npm run keys:rotate` and `npm run keys:reencrypt`: the operator's side of erasure, export, the
 * audit log and content key rotation, run where the database can be reached. The
 * actor in receipts and audit records is `cli` and the machine's user name. A mistake is one line
 * and exit code 1 (2 for a wrong command line); a verification that finds a problem exits 1.
 */
const [command, ...rest] = process.argv.slice(2);
const { values } = parseCliArgs(USAGE, { options: OPTIONS, allowPositionals: false }, rest);
let config: Config | undefined;
try {
  if (!["erase", "export", "import", "audit-verify", "rotate-key", "reencrypt"].includes(command ?? "")) {
    throw mistake(`unknown command ${command ?? "(none)"}\n${USAGE}`);
  }
  config = loadConfig();
  if (!config.mongodbUri) throw new ValidationError("invalid configuration", [{ path: "MONGODB_URI", message: "required (the database to act on)" }]);
  const client = createMongoClient(config.mongodbUri, config.mongo);
  try {
    await client.connect();
    // Tenants' content keys: an export decrypts contents for the requester, a tenant's erasure shreds its keys.
    const keys = createTenantKeys(config.encryption, { db: client.db(config.dbName), localDir: DEFAULT_LOCAL_DIR });
    const database = databaseFor(client, config, undefined, keys);
    const audit = new AuditLog(database.db, { retentionDays: config.lifecycle.auditRetentionDays });
    const actor = { issuer: "cli", tenant: null, subject: userInfo().username };
    if (command === "erase") {
      const target: DataTarget = values.conversation !== undefined ? { kind: "conversation", conversationId: values.conversation } : subjectTarget(values);
      const eraser = new Eraser({ database, audit, auditRetentionDays: config.lifecycle.auditRetentionDays, mcpDefaults: config.mcp.servers });
      console.log(JSON.stringify(await eraser.erase({ target, actor, channel: "cli" }), null, 2));
    } else if (command === "export") {
      if (values.out === undefined) throw mistake("--out names the folder to write");
      const target = subjectTarget(values);
      const manifest = await writeExport(database.db, target, values.out, new Date(), database.cipher);
      const counts = Object.fromEntries(Object.entries(manifest.collections).map(([name, c]) => [name, c.count]));
      await audit.append({
        action: "export",
        actor,
        tenant: { issuer: target.issuer, tenant: target.tenant },
        resource: { kind: target.kind, ...(target.kind === "user" && { subject: target.subject }) },
        channel: "cli",
        detail: { manifestHash: manifest.hash, counts },
      });
      console.log(JSON.stringify({ folder: values.out, manifestHash: manifest.hash, counts }, null, 2));
    } else if (command === "import") {
      if (values.in === undefined) throw mistake("--in names the folder an export wrote");
      const { manifest, contents } = await readExport(values.in);
      console.log(JSON.stringify({ database: config.dbName, inserted: await importData(database.db, manifest, contents) }, null, 2));
    } else if (command === "rotate-key" || command === "reencrypt") {
      const tenant = tenantRefOf(values);
      const rotation = new KeyRotation({ database, audit, rotationDays: config.encryption.keyRotationDays });
      if (command === "rotate-key") {
        console.log(JSON.stringify(await rotation.rotate(tenant, { actor, channel: "cli" }), null, 2));
      } else {
        // Progress on stderr, a line a batch; the outcome on stdout.
        const onBatch = (b: { collection: string; examined: number; resealed: number; raced: number }) =>
          console.error(JSON.stringify({ collection: b.collection, examined: b.examined, resealed: b.resealed, raced: b.raced }));
        const outcome = await rotation.reencrypt(tenant, { onBatch });
        const job = "job" in outcome ? reencryptionView(outcome.job) : await rotation.status(tenant);
        console.log(JSON.stringify({ outcome: outcome.status, ...("startsAt" in outcome && { startsAt: outcome.startsAt }), reencryption: job }, null, 2));
      }
    } else {
      const tenant = values.issuer === undefined ? undefined : tenantRefOf(values);
      const result = await audit.verify(tenant);
      console.log(JSON.stringify(result, null, 2));
      if (result.problems.length > 0) process.exitCode = 1;
    }
  } finally {
    await client.close();
  }
} catch (error) {
  const context = { mongodbUri: config?.mongodbUri, serverSelectionTimeoutMs: config?.mongo.serverSelectionTimeoutMs, embeddedFallback: false };
  console.error(explainStartupError(error, context));
  process.exitCode = 1;
}
