import { describe, expect, it } from "vitest";
import { StaleWriterError, ValidationError } from "../../../lib/errors.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { isVisible, readFenceEpoch, ThreadFences, type ThreadFenceDocument } from "../../../lib/store/checkpoint/thread-fences.js";
import { Gate } from "../../support/gate.js";
import { useStoreFixture } from "../../support/store-fixture.js";

const { stores } = useStoreFixture("thread_fences", (db) => ({
  fences: new ThreadFences(db.collection<ThreadFenceDocument>(COLLECTIONS.checkpointThreads), () => ({})),
}));
const { fences } = stores;

async function staleError(promise: Promise<unknown>): Promise<StaleWriterError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StaleWriterError);
  return error as StaleWriterError;
}

describe("ThreadFences", () => {
  describe("claim", () => {
    it("creates the thread's fence at the epoch, with no marks", async () => {
      await fences.claim("t", 2);
      expect(await fences.view("t")).toMatchObject({ fence: 2, marks: {} });
    });

    it("raises the fence to a higher epoch and accepts the same one again", async () => {
      await fences.claim("t", 1);
      await fences.claim("t", 3);
      await fences.claim("t", 3);
      expect((await fences.view("t"))?.fence).toBe(3);
    });

    it("throws StaleWriterError with the current epoch when the fence is higher", async () => {
      await fences.claim("t", 5);
      const error = await staleError(fences.claim("t", 4));
      expect(error).toMatchObject({ threadId: "t", epoch: 4, currentEpoch: 5 });
      expect((await fences.view("t"))?.fence).toBe(5);
    });

    it("throws ValidationError for an empty thread id or an epoch that is not a non-negative integer", async () => {
      await expect(fences.claim("", 1)).rejects.toBeInstanceOf(ValidationError);
      await expect(fences.claim("t", -1)).rejects.toBeInstanceOf(ValidationError);
      await expect(fences.claim("t", 1.5)).rejects.toBeInstanceOf(ValidationError);
    });
  });

  describe("assertHeld", () => {
    it("returns the view while the fence is at or below the epoch", async () => {
      await fences.claim("t", 2);
      expect(await fences.assertHeld("t", 2)).toMatchObject({ fence: 2 });
      expect(await fences.assertHeld("t", 3)).toMatchObject({ fence: 2 });
    });

    it("throws StaleWriterError for a lower epoch, and for a thread without a fence", async () => {
      await fences.claim("t", 2);
      expect(await staleError(fences.assertHeld("t", 1))).toMatchObject({ currentEpoch: 2 });
      const deleted = await staleError(fences.assertHeld("gone", 1));
      expect(deleted.currentEpoch).toBeUndefined();
      expect(deleted.message).toContain("has no fence");
    });
  });

  describe("write", () => {
    it("returns the write's result and commits its token as the epoch's mark", async () => {
      await fences.claim("t", 1);
      let written = 0;
      const result = await fences.write(
        "t",
        1,
        async (token) => {
          written = token;
          return "done";
        },
        async () => undefined,
      );
      expect(result).toBe("done");
      expect((await fences.view("t"))?.marks).toEqual({ "1": written });
    });

    it("undoes the write with its token and throws StaleWriterError when the fence rose above the epoch", async () => {
      await fences.claim("t", 1);
      let written = 0;
      const undone: number[] = [];
      const refused = fences.write(
        "t",
        1,
        async (token) => {
          written = token;
          await fences.claim("t", 2);
        },
        async (token) => undone.push(token),
      );
      expect(await staleError(refused)).toMatchObject({ epoch: 1, currentEpoch: 2 });
      expect(undone).toEqual([written]);
      expect((await fences.view("t"))?.marks).toEqual({});
    });

    it("runs the writes of one thread and epoch one after another, tokens growing in commit order", async () => {
      await fences.claim("t", 1);
      const gate = new Gate();
      const order: string[] = [];
      const tokens: number[] = [];
      const first = fences.write(
        "t",
        1,
        async (token) => {
          tokens.push(token);
          order.push("first starts");
          await gate.pass();
          order.push("first ends");
        },
        async () => undefined,
      );
      await gate.reached;
      const second = fences.write(
        "t",
        1,
        async (token) => {
          tokens.push(token);
          order.push("second");
        },
        async () => undefined,
      );
      gate.open();
      await Promise.all([first, second]);
      expect(order).toEqual(["first starts", "first ends", "second"]);
      expect(tokens[1]).toBeGreaterThan(tokens[0]);
      expect((await fences.view("t"))?.marks).toEqual({ "1": tokens[1] });
    });
  });

  describe("forgetMarks", () => {
    it("removes the named epochs' marks and keeps the others", async () => {
      await fences.claim("t", 1);
      await fences.write(
        "t",
        1,
        async () => undefined,
        async () => undefined,
      );
      await fences.claim("t", 2);
      await fences.write(
        "t",
        2,
        async () => undefined,
        async () => undefined,
      );
      await fences.forgetMarks("t", ["1"]);
      expect(Object.keys((await fences.view("t"))?.marks ?? {})).toEqual(["2"]);
    });
  });

  describe("remove", () => {
    it("deletes the thread's fence, so the view is null", async () => {
      await fences.claim("t", 1);
      await fences.remove("t");
      expect(await fences.view("t")).toBeNull();
    });
  });
});

describe("isVisible", () => {
  it("returns true for a document without a token (unfenced or compacted)", () => {
    expect(isVisible({}, null)).toBe(true);
    expect(isVisible({ epoch: 3 }, null)).toBe(true);
  });

  it("returns true for a fenced document only when its token is at most its epoch's mark", () => {
    const view = { fence: 2, marks: { "1": 100 } };
    expect(isVisible({ epoch: 1, token: 100 }, view)).toBe(true);
    expect(isVisible({ epoch: 1, token: 101 }, view)).toBe(false);
    expect(isVisible({ epoch: 2, token: 50 }, view)).toBe(false);
    expect(isVisible({ epoch: 1, token: 1 }, null)).toBe(false);
  });
});

describe("readFenceEpoch", () => {
  it("returns undefined for an absent epoch and the number for a non-negative integer", () => {
    expect(readFenceEpoch(undefined)).toBeUndefined();
    expect(readFenceEpoch(null)).toBeUndefined();
    expect(readFenceEpoch(0)).toBe(0);
  });

  it("throws ValidationError for a string, a fraction or a negative number", () => {
    for (const value of ["1", 1.5, -1]) expect(() => readFenceEpoch(value)).toThrow(ValidationError);
  });

  describe("beginPrune", () => {
    it("returns a lease, and undefined to a second prune while the lease holds", async () => {
      await fences.claim("t", 1);
      expect(await fences.beginPrune("t", 1, 60_000)).toMatchObject({ token: expect.any(Number) });
      expect(await fences.beginPrune("t", 1, 60_000)).toBeUndefined();
      expect(await fences.beginPrune("t", undefined, 60_000)).toBeUndefined();
    });

    it("throws StaleWriterError when the fence is above the prune's epoch", async () => {
      await fences.claim("t", 3);
      expect((await staleError(fences.beginPrune("t", 2, 60_000))).currentEpoch).toBe(3);
    });
  });

  describe("assertPruning", () => {
    it("throws StaleWriterError to a prune that outlived its lease once another took it", async () => {
      await fences.claim("t", 1);
      const first = await fences.beginPrune("t", 1, 1);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const second = await fences.beginPrune("t", 1, 60_000);
      expect(second).toBeDefined();
      await staleError(fences.assertPruning("t", 1, first?.token as number));
      await expect(fences.assertPruning("t", 1, second?.token as number)).resolves.toBeUndefined();
    });

    it("throws StaleWriterError to a prune whose fence was raised", async () => {
      await fences.claim("t", 1);
      const lease = await fences.beginPrune("t", 1, 60_000);
      await fences.claim("t", 2);
      expect((await staleError(fences.assertPruning("t", 1, lease?.token as number))).currentEpoch).toBe(2);
    });
  });

  describe("endPrune", () => {
    it("releases the lease and records the state for the next prune", async () => {
      await fences.claim("t", 1);
      const lease = await fences.beginPrune("t", 1, 60_000);
      await fences.endPrune("t", lease?.token as number, { keep: 3 });
      expect((await fences.view("t"))?.prune).toEqual({ keep: 3 });
      expect(await fences.beginPrune("t", 1, 60_000)).toBeDefined();
    });
  });
});
