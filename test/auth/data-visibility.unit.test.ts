import { combinedProvenance, maySee, parseProvenance, withheldFrom, withheldNotice, type Provenance } from "../../lib/auth/data-visibility.js";
import { slackPrincipal, teamsPrincipal, type Caller } from "../../lib/auth/principal.js";

const analyst: Caller = { principal: slackPrincipal("T0ACME", "U0ANNA"), roles: ["analyst", "viewer"] };
const viewer: Caller = { principal: slackPrincipal("T0ACME", "U0BEN"), roles: ["viewer"] };
const otherAnalyst: Caller = { principal: slackPrincipal("T0ACME", "U0CARL"), roles: ["analyst"] };

const gated: Provenance = [{ tool: "sql_query", roles: ["analyst"] }];
const annasOwn: Provenance = [{ tool: "crm_lookup", user: slackPrincipal("T0ACME", "U0ANNA") }];

describe("data-visibility", () => {
  describe("withheldFrom", () => {
    it("returns undefined for data of a tool open to everyone", () => {
      expect(withheldFrom([{ tool: "search_conversation" }], viewer)).toBeUndefined();
    });

    it("returns undefined for a caller holding one of the roles that allowed the tool", () => {
      expect(withheldFrom(gated, analyst)).toBeUndefined();
    });

    it("returns the tool and its roles for a colleague without the role", () => {
      expect(withheldFrom(gated, viewer)).toEqual({ tool: "sql_query", why: "role", roles: ["analyst"] });
    });

    it("returns why user for data fetched with another user's own credentials, whatever the roles", () => {
      expect(withheldFrom(annasOwn, otherAnalyst)).toEqual({ tool: "crm_lookup", why: "user" });
      expect(withheldFrom(annasOwn, analyst)).toBeUndefined();
    });

    it("returns why user for the same subject of another issuer or tenant", () => {
      expect(withheldFrom(annasOwn, { principal: slackPrincipal("T0GLOBEX", "U0ANNA"), roles: [] })).toEqual({ tool: "crm_lookup", why: "user" });
      expect(withheldFrom(annasOwn, { principal: teamsPrincipal("T0ACME", "U0ANNA"), roles: [] })).toEqual({ tool: "crm_lookup", why: "user" });
    });

    it("returns the first refusing source when data repeats several (a read of an artifact)", () => {
      const read: Provenance = [{ tool: "read_tool_output" }, ...gated];
      expect(withheldFrom(read, viewer)).toEqual({ tool: "sql_query", why: "role", roles: ["analyst"] });
      expect(maySee(read, analyst)).toBe(true);
    });
  });

  describe("withheldNotice", () => {
    it("says what is hidden and which role it needs", () => {
      expect(withheldNotice({ tool: "sql_query", why: "role", roles: ["analyst", "finance"] })).toBe(
        "[Withheld: what sql_query was asked and returned is hidden from you because it needs the role analyst or finance, " +
          "which you do not have. Do not guess it.]",
      );
    });

    it("says data fetched with another user's credentials is theirs", () => {
      expect(withheldNotice({ tool: "crm_lookup", why: "user" })).toContain("fetched with another user's own credentials");
    });
  });

  describe("parseProvenance", () => {
    it("returns undefined for a value stored without provenance or malformed", () => {
      expect(parseProvenance(undefined)).toBeUndefined();
      expect(parseProvenance([{ roles: ["x"] }])).toBeUndefined();
    });

    it("returns the stored sources", () => {
      expect(parseProvenance(annasOwn)).toEqual(annasOwn);
    });
  });

  describe("combinedProvenance", () => {
    it("returns each source once, in first-seen order", () => {
      expect(combinedProvenance(gated, [{ tool: "read_tool_output" }], gated, undefined)).toEqual([...gated, { tool: "read_tool_output" }]);
    });
  });
});
