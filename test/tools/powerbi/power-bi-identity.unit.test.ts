import { describe, expect, it } from "vitest";
import { apiPrincipal, slackPrincipal, teamsPrincipal } from "../../../lib/auth/principal.js";
import { ToolError } from "../../../lib/errors.js";
import { powerBiIdentityKey, powerBiUserOf } from "../../../lib/tools/powerbi/power-bi-identity.js";

const OPTIONS = { entraTenantId: "6f1c0000-aaaa-bbbb-cccc-000000000001", map: { "slack:T0ACME:U0ALICE": "alice@acme.com" } };
const OBJECT_ID = "0f9c3a52-7d1e-4b7a-9c55-2a1b3c4d5e6f";

describe("powerBiUserOf", () => {
  it("returns the mapped user for a Slack user in the identity map", () => {
    expect(powerBiUserOf(slackPrincipal("T0ACME", "U0ALICE"), OPTIONS)).toBe("alice@acme.com");
  });

  it("returns the Entra object id of a Teams user of the workspace's tenant, whatever the case of the tenant id", () => {
    expect(powerBiUserOf(teamsPrincipal(OPTIONS.entraTenantId.toUpperCase(), OBJECT_ID), OPTIONS)).toBe(OBJECT_ID);
  });

  it("returns the subject of an API user whose token names the workspace's tenant", () => {
    expect(powerBiUserOf(apiPrincipal("alice@acme.com", OPTIONS.entraTenantId), OPTIONS)).toBe("alice@acme.com");
  });

  it("returns the map's entry over the subject", () => {
    const key = powerBiIdentityKey(teamsPrincipal(OPTIONS.entraTenantId, OBJECT_ID));
    expect(powerBiUserOf(teamsPrincipal(OPTIONS.entraTenantId, OBJECT_ID), { ...OPTIONS, map: { [key]: "alice@acme.com" } })).toBe("alice@acme.com");
  });

  it.each([
    ["a Slack user without an entry", slackPrincipal("T0ACME", "U0MALLORY")],
    ["a Teams user of another tenant", teamsPrincipal("globex", OBJECT_ID)],
    ["a Teams user named by a channel account id, not an object id", teamsPrincipal(OPTIONS.entraTenantId, "29:1xyz")],
    ["an API user of another tenant", apiPrincipal("mallory@globex.com", "globex")],
    ["an API user without a tenant", apiPrincipal("mallory@globex.com")],
    ["a principal whose key is an Object prototype name", slackPrincipal("T0ACME", "constructor")],
  ])("throws a ToolError for %s", (_name, principal) => {
    expect(() => powerBiUserOf(principal, OPTIONS)).toThrow(ToolError);
  });
});

describe("powerBiIdentityKey", () => {
  it("returns issuer:tenant:subject, with an empty tenant for a caller without one", () => {
    expect(powerBiIdentityKey(slackPrincipal("T0ACME", "U0ALICE"))).toBe("slack:T0ACME:U0ALICE");
    expect(powerBiIdentityKey(apiPrincipal("bob"))).toBe("api::bob");
  });
});
