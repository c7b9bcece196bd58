import { describe, expect, it } from "vitest";
import { axisPosition, type LineChart, lineChart, type Panel, panelInRow } from "../../../bench/support/line-chart.js";

/** A 100 × 100 plot at (50, 20): a value's pixel is easy to read off. */
function panel(overrides: Partial<Panel> = {}): Panel {
  return {
    left: 50,
    top: 20,
    width: 100,
    height: 100,
    x: { min: 0, max: 10, ticks: [] },
    y: { min: 0, max: 100, ticks: [] },
    series: [],
    ...overrides,
  };
}

function chart(panels: Panel[], overrides: Partial<LineChart> = {}): string {
  return lineChart({ width: 200, height: 160, panels, legend: { x: 10, y: 150, spacing: 100, entries: [] }, ...overrides });
}

const polylines = (svg: string) => [...svg.matchAll(/<polyline [^>]*points="([^"]*)"/g)].map((m) => m[1]);

describe("line-chart", () => {
  describe("axisPosition", () => {
    it("returns the linear share of the axis' range", () => {
      expect(axisPosition({ min: 10, max: 30, ticks: [] }, 15)).toBe(0.25);
    });

    it("returns equal steps for each decade on a log axis", () => {
      const axis = { scale: "log" as const, min: 100, max: 100_000, ticks: [] };
      expect([100, 1_000, 10_000, 100_000].map((v) => axisPosition(axis, v))).toEqual([0, 1 / 3, 2 / 3, 1]);
    });

    it("returns the nearest edge for a value outside the axis", () => {
      const axis = { scale: "log" as const, min: 100, max: 1_000, ticks: [] };
      expect([1, 0, 5_000].map((v) => axisPosition(axis, v))).toEqual([0, 0, 1]);
    });
  });

  describe("panelInRow", () => {
    it("returns the plot area of the panel at its place in the row, inside its margin", () => {
      expect(panelInRow(2, 500, 300, { left: 70, right: 20, top: 40, bottom: 50 })).toEqual({ left: 1070, top: 40, width: 410, height: 210 });
    });
  });

  describe("lineChart", () => {
    it("returns a polyline per series from the plot's bottom-left to its top-right in data order", () => {
      const svg = chart([
        panel({
          series: [
            {
              points: [
                { x: 0, y: 0 },
                { x: 5, y: 50 },
                { x: 10, y: 100 },
              ],
              color: "#123456",
            },
          ],
        }),
      ]);
      expect(polylines(svg)).toEqual(["50,120 100,70 150,20"]);
      expect(svg).toContain('stroke="#123456" stroke-width="2" points=');
    });

    it("returns a gridline and a label per y tick and a mark and a label per x tick", () => {
      const svg = chart([
        panel({ x: { min: 0, max: 10, ticks: [{ value: 5, label: "five" }] }, y: { min: 0, max: 100, ticks: [{ value: 25, label: "quarter" }] } }),
      ]);
      expect(svg).toContain('<line x1="50" y1="95" x2="150" y2="95" stroke="#e5e5e5"/>');
      expect(svg).toContain('<text x="42" y="99" text-anchor="end" fill="#555">quarter</text>');
      expect(svg).toContain('<line x1="100" y1="120" x2="100" y2="125" stroke="#333"/>');
      expect(svg).toContain('<text x="100" y="138" text-anchor="middle" fill="#555">five</text>');
    });

    it("returns a dot per point only for a series with markers", () => {
      const points = [
        { x: 1, y: 1 },
        { x: 2, y: 2 },
      ];
      const svg = chart([
        panel({
          series: [
            { points, color: "red", markers: true },
            { points, color: "blue" },
          ],
        }),
      ]);
      expect(svg.match(/<circle [^>]*\/>/g)).toEqual(['<circle cx="60" cy="119" r="2.5" fill="red"/>', '<circle cx="70" cy="118" r="2.5" fill="red"/>']);
    });

    it("returns a legend line per entry, dashed only where the entry is", () => {
      const svg = chart([panel()], {
        legend: {
          x: 10,
          y: 150,
          spacing: 100,
          entries: [
            { label: "solid", color: "#111" },
            { label: "dashed", color: "#222", dash: "6 4" },
          ],
        },
      });
      expect(svg).toContain('<line x1="10" y1="150" x2="34" y2="150" stroke="#111" stroke-width="2"/>');
      expect(svg).toContain('<line x1="110" y1="150" x2="134" y2="150" stroke="#222" stroke-width="2" stroke-dasharray="6 4"/>');
      expect(svg).toContain('<text x="140" y="154" fill="#333">dashed</text>');
    });

    it("returns one svg element whose text escapes markup", () => {
      const svg = chart([panel({ title: "a < b & c" })], { title: "R² > 0.99" });
      expect(svg.startsWith("<svg ")).toBe(true);
      expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
      expect(svg).toContain(">a &lt; b &amp; c</text>");
      expect(svg).toContain(">R² &gt; 0.99</text>");
    });
  });
});
