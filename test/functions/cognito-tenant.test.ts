import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COGNITO_TENANT_CLAIM } from "../../lib/config/user-pool.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { startHarness, type Harness } from "./support/harness.js";

/**
 * The api function as the stack deploys it with its own Cognito pool (`JWT_TENANT_CLAIM=custom:tenant`,
 * `JWT_REQUIRE_TENANT=true`), handed the claims API Gateway's JWT authorizer hands over (issue 41, row 11).
 * The authorizer accepts the pool's access token, whose `client_id` stands for the absent `aud` and
 * which carries no `custom:tenant`: read as before, its user was the principal (api, null, sub),
 * outside the tenant's limits.
 */

let h: Harness;
const POOL = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Test";
const CLIENT = "4tq6bqm0example";
const SUB = "8f2e1a7c-0000-4000-8000-00000000a11c";
const now = Math.floor(Date.now() / 1000);

/** A Cognito access token's claims as API Gateway hands them over: strings, no `aud`, no custom attributes. */
const accessToken = {
  sub: SUB,
  iss: POOL,
  client_id: CLIENT,
  origin_jti: "0b6d3c1e-origin",
  event_id: "6c1d1c3e-event",
  token_use: "access",
  scope: "aws.cognito.signin.user.admin",
  auth_time: String(now),
  exp: String(now + 3600),
  iat: String(now),
  jti: "d3a1e0f2-jti",
  username: "alice",
};
/** The same user's ID token: `aud` the client, the tenant attribute. */
const idToken = {
  sub: SUB,
  iss: POOL,
  aud: CLIENT,
  token_use: "id",
  auth_time: String(now),
  exp: String(now + 3600),
  iat: String(now),
  "cognito:username": "alice",
  [COGNITO_TENANT_CLAIM]: "acme",
};

beforeAll(async () => {
  h = await startHarness({ env: { JWT_ISSUER: POOL, JWT_AUDIENCE: CLIENT, JWT_TENANT_CLAIM: COGNITO_TENANT_CLAIM, JWT_REQUIRE_TENANT: "true" } });
});
afterAll(async () => h?.close());

describe("the api function with the stack's Cognito pool", () => {
  it("returns 401 to a Cognito access token, saying to send the ID token, and creates nothing", async () => {
    const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: accessToken });
    expect(created.status).toBe(401);
    expect(created.json.error.message).toContain("send the ID token");
    expect(await h.database.db.collection(COLLECTIONS.conversations).countDocuments({ "owner.subject": SUB })).toBe(0);
    const protocol = await h.api({ method: "POST", path: "/threads", routeKey: "POST /threads", claims: accessToken, body: {} });
    expect(protocol.status).toBe(401);
  });

  it("takes the same user's ID token as a principal of its tenant", async () => {
    const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: idToken });
    expect(created.status).toBe(201);
    const stored = await h.database.db.collection(COLLECTIONS.conversations).findOne({ _id: created.json.conversationId });
    expect(stored?.owner).toEqual({ issuer: "api", tenant: "acme", subject: SUB });
  });
});
