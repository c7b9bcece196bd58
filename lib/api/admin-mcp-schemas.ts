import { z } from "zod";
import { ISSUER_KINDS } from "../auth/principal.js";
import { isMetadataHost } from "../config/mcp-ip-ranges.js";
import { mcpServerEntrySchema } from "../config/mcp-servers-config.js";

/**
 * The shapes of `/v1/admin/mcp-servers` (`lib/api/admin-mcp-routes.ts`, docs/mcp.md): a tenant
 * named by issuer kind and tenant, and its MCP server entries.
 */

const name = z.string().min(1).max(200);

/** Which tenant: as the admin API names one. */
export const mcpTenantQuery = z.strictObject({
  issuer: z.enum(ISSUER_KINDS).meta({ description: "`api`, `slack` or `teams`." }),
  tenant: name.optional().meta({ description: "The tenant claim, Slack workspace or Entra tenant; absent for API users without a tenant." }),
});

export const mcpServerNameQuery = mcpTenantQuery.extend({ name: z.string().min(1).max(24).meta({ description: "The server's name." }) });

/**
 * A tenant's entry: Streamable HTTP only (a stdio entry runs a command, which only the
 * deployment's own configuration may do, and only locally), never at an instance metadata address.
 */
const tenantServerEntry = mcpServerEntrySchema.superRefine((entry, ctx) => {
  if (entry.transport.kind !== "streamable-http") {
    ctx.addIssue({
      code: "custom",
      path: ["transport", "kind"],
      message: "a tenant's server is reached over streamable-http; stdio is for MCP_SERVERS in local mode",
    });
  } else if (isMetadataHost(new URL(entry.transport.url).hostname)) {
    // In every spelling; every other address is checked when connecting (docs/mcp.md, "Egress").
    ctx.addIssue({ code: "custom", path: ["transport", "url"], message: "an instance metadata address is not an MCP server" });
  }
});

export const putMcpServerBody = mcpTenantQuery.extend({ server: tenantServerEntry });

export const mcpServersView = z.object({
  tenant: z.object({ issuer: z.enum(ISSUER_KINDS), tenant: z.string().nullable() }),
  servers: z
    .array(mcpServerEntrySchema)
    .meta({ description: "What the tenant's turns use: its own entries over the configured defaults (`MCP_SERVERS`), by name." }),
  own: z.array(z.object({ server: mcpServerEntrySchema, updatedAt: z.iso.datetime() })).meta({ description: "The tenant's own entries, as set." }),
  defaults: z.array(mcpServerEntrySchema),
});
