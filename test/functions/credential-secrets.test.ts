import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { CredentialSecrets, type SecretUnreadableError } from "../../functions/shared/credential-secrets.js";
import { startLocalAws, TEST_REGION, type LocalAws } from "./support/aws-endpoints.js";

const CACHE_MS = 300_000;
const DENIED = { type: "AccessDeniedException", message: "Access to KMS is not allowed" };

let aws: LocalAws;
let client: SecretsManagerClient;

beforeAll(async () => {
  aws = await startLocalAws();
  client = new SecretsManagerClient({
    region: TEST_REGION,
    endpoint: aws.url,
    credentials: { accessKeyId: "AKIDLOCALTEST", secretAccessKey: "local-test-secret" },
  });
});

afterAll(async () => {
  client.destroy();
  await aws.close();
});

beforeEach(() => {
  aws.failSecret("database", undefined);
  aws.setCredentials({ mongodbUri: "mongodb+srv://db.example.net/" });
});

/** The database and channel-replies secrets, on a clock the test moves; failures collected, `reported` settled by the first. */
function secretsOnClock() {
  const clock = { now: 1_000_000 };
  const failures: SecretUnreadableError[] = [];
  let settle = () => undefined as void;
  const reported = new Promise<void>((resolve) => (settle = resolve));
  const secrets = new CredentialSecrets({
    client,
    arns: { database: aws.secretArns.database, channelReplies: aws.secretArns.channelReplies },
    cacheMs: CACHE_MS,
    onFailure: (error) => {
      failures.push(error);
      settle();
    },
    now: () => clock.now,
  });
  return { secrets, clock, failures, reported };
}

describe("CredentialSecrets", () => {
  describe("values", () => {
    it("returns each secret parsed, read once while the cache lasts and again after it", async () => {
      const { secrets, clock } = secretsOnClock();
      const before = aws.secretFetches.database;
      expect(await secrets.values()).toEqual({
        database: { mongodbUri: "mongodb+srv://db.example.net/" },
        channelReplies: { slackBotToken: "", teamsAppPassword: "" },
      });
      clock.now += CACHE_MS - 1;
      await secrets.values();
      expect(aws.secretFetches.database).toBe(before + 1);
      clock.now += 1;
      await secrets.values();
      expect(aws.secretFetches.database).toBe(before + 2);
    });

    it("returns a secret that is not JSON as its string, for the credentials' validation to refuse", async () => {
      aws.setSecretString("database", "mongodb+srv://db.example.net/");
      const { secrets } = secretsOnClock();
      expect((await secrets.values()).database).toBe("mongodb+srv://db.example.net/");
    });

    it("throws SecretUnreadableError naming the secret when it cannot be read and none was before, and reports it", async () => {
      aws.failSecret("database", DENIED);
      const { secrets, failures } = secretsOnClock();
      await expect(secrets.values()).rejects.toMatchObject({ name: "SecretUnreadableError", secret: "database", cause: { name: "AccessDeniedException" } });
      expect(failures.map((f) => f.secret)).toEqual(["database"]);
    });

    it("returns the values read before while a refresh fails, and the new ones once it succeeds", async () => {
      const { secrets, clock, failures } = secretsOnClock();
      await secrets.values();
      aws.failSecret("database", DENIED);
      clock.now += CACHE_MS;
      expect((await secrets.values()).database).toEqual({ mongodbUri: "mongodb+srv://db.example.net/" });
      expect(failures).toHaveLength(1);
      aws.failSecret("database", undefined);
      aws.setCredentials({ mongodbUri: "mongodb+srv://rotated.example.net/" });
      expect((await secrets.values()).database).toEqual({ mongodbUri: "mongodb+srv://rotated.example.net/" });
    });
  });

  describe("prefetch", () => {
    it("reports a failed fetch that no one awaits, without an unhandled rejection, and lets the next call read again", async () => {
      aws.failSecret("database", DENIED);
      const { secrets, failures, reported } = secretsOnClock();
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", onUnhandled);
      try {
        secrets.prefetch();
        await reported;
        // A turn of the event loop after the rejection: where Node reports an unhandled one.
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off("unhandledRejection", onUnhandled);
      }
      expect(unhandled).toEqual([]);
      expect(failures.map((f) => f.secret)).toEqual(["database"]);
      aws.failSecret("database", undefined);
      expect((await secrets.values()).database).toEqual({ mongodbUri: "mongodb+srv://db.example.net/" });
    });
  });
});
