import { describe, expect, it } from "vitest";
import { SerialCalls } from "../../lib/channels/serial-calls.js";
import { Gate } from "../support/gate.js";

describe("SerialCalls", () => {
  describe("add", () => {
    it("runs each call after every call added before it, in order", async () => {
      const calls = new SerialCalls();
      const gate = new Gate();
      const order: string[] = [];
      calls.add(async () => {
        await gate.pass();
        order.push("first");
      });
      calls.add(async () => void order.push("second"));
      await gate.reached;
      expect(order).toEqual([]);
      gate.open();
      await calls.settled();
      expect(order).toEqual(["first", "second"]);
    });
  });

  describe("settled", () => {
    it("waits for calls added while it waits", async () => {
      const calls = new SerialCalls();
      const order: string[] = [];
      calls.add(async () => {
        order.push("first");
        calls.add(async () => void order.push("added meanwhile"));
      });
      await calls.settled();
      expect(order).toEqual(["first", "added meanwhile"]);
    });

    it("returns at once when nothing was added", async () => {
      await expect(new SerialCalls().settled()).resolves.toBeUndefined();
    });
  });
});
