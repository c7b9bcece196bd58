import type { Point } from "./statistics.js";

/** One line of a panel: its points in data units, joined in order. */
export interface LineSeries {
  points: readonly Point[];
  color: string;
  /** `stroke-dasharray`, e.g. "6 4". Default: a solid line. */
  dash?: string;
  /** Stroke width. Default: 2. */
  width?: number;
  /** A dot on each point. Default: false. */
  markers?: boolean;
}

export interface Tick {
  value: number;
  label: string;
}

export interface Axis {
  /** Default: "linear". On "log", `min` and `max` must be above 0. */
  scale?: "linear" | "log";
  min: number;
  max: number;
  /** Labelled at the axis; a y tick also draws a gridline across the plot. */
  ticks: readonly Tick[];
  /** Default: no title. */
  title?: string;
}

/** One plot: its area in the picture (pixels), its axes and lines; a value outside an axis is drawn at its edge. */
export interface Panel {
  left: number;
  top: number;
  width: number;
  height: number;
  title?: string;
  x: Axis;
  y: Axis;
  series: readonly LineSeries[];
  /** A line of text in the plot's top-left corner. */
  note?: string;
}

export interface LegendEntry {
  label: string;
  color: string;
  dash?: string;
}

export interface LineChart {
  width: number;
  height: number;
  title?: string;
  panels: readonly Panel[];
  /** Entries in a row from (x, y), `spacing` pixels apart. */
  legend: { x: number; y: number; spacing: number; entries: readonly LegendEntry[] };
}

/** Space around a plot, for its title, tick labels and axis titles. */
export interface Margin {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** The plot area of the `index`th of a row of panels, each `width` × `height` with `margin` around its plot. */
export function panelInRow(index: number, width: number, height: number, margin: Margin): Pick<Panel, "left" | "top" | "width" | "height"> {
  return { left: index * width + margin.left, top: margin.top, width: width - margin.left - margin.right, height: height - margin.top - margin.bottom };
}

const AXIS = "#333";
const GRID = "#e5e5e5";
const MUTED = "#555";

/** A coordinate with one decimal, as short as the picture needs. */
const px = (n: number): string => String(Math.round(n * 10) / 10);

const escapeXml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const dashAttribute = (dash: string | undefined): string => (dash ? ` stroke-dasharray="${dash}"` : "");

/** A text element at (x, y); `attributes` (anchor, fill, font) as written. */
const text = (x: number, y: number, attributes: string, content: string): string =>
  `<text x="${px(x)}" y="${px(y)}" ${attributes}>${escapeXml(content)}</text>`;

/** A straight line; `attributes` beyond the stroke colour as written. */
const line = (x1: number, y1: number, x2: number, y2: number, stroke: string, attributes = ""): string =>
  `<line x1="${px(x1)}" y1="${px(y1)}" x2="${px(x2)}" y2="${px(y2)}" stroke="${stroke}"${attributes}/>`;

/** Where `value` falls from 0 (the axis' min) to 1 (its max), held within the axis. */
export function axisPosition(axis: Axis, value: number): number {
  const at = (v: number) => (axis.scale === "log" ? Math.log10(v) : v);
  const share = (at(Math.min(Math.max(value, axis.min), axis.max)) - at(axis.min)) / (at(axis.max) - at(axis.min));
  return Number.isFinite(share) ? share : 0;
}

function panelParts(panel: Panel): string[] {
  const { left, top, width, height } = panel;
  const bottom = top + height;
  const x = (v: number) => left + axisPosition(panel.x, v) * width;
  const y = (v: number) => bottom - axisPosition(panel.y, v) * height;
  const parts: string[] = [];
  if (panel.title) {
    parts.push(text(left + width / 2, top - 14, 'text-anchor="middle" font-size="14" font-weight="bold"', panel.title));
  }
  for (const tick of panel.y.ticks) {
    parts.push(
      line(left, y(tick.value), left + width, y(tick.value), GRID),
      text(left - 8, y(tick.value) + 4, `text-anchor="end" fill="${MUTED}"`, tick.label),
    );
  }
  for (const tick of panel.x.ticks) {
    parts.push(
      line(x(tick.value), bottom, x(tick.value), bottom + 5, AXIS),
      text(x(tick.value), bottom + 18, `text-anchor="middle" fill="${MUTED}"`, tick.label),
    );
  }
  if (panel.x.title) parts.push(text(left + width / 2, bottom + 38, `text-anchor="middle" fill="${AXIS}"`, panel.x.title));
  if (panel.y.title) {
    const at = `translate(${px(left - 52)},${px(top + height / 2)}) rotate(-90)`;
    parts.push(`<text transform="${at}" text-anchor="middle" fill="${AXIS}">${escapeXml(panel.y.title)}</text>`);
  }
  parts.push(`<rect x="${px(left)}" y="${px(top)}" width="${px(width)}" height="${px(height)}" fill="none" stroke="${AXIS}"/>`);
  for (const series of panel.series) {
    const points = series.points.map((p) => `${px(x(p.x))},${px(y(p.y))}`);
    parts.push(
      `<polyline fill="none" stroke="${series.color}" stroke-width="${series.width ?? 2}"${dashAttribute(series.dash)} points="${points.join(" ")}"/>`,
    );
    if (series.markers) {
      for (const p of series.points) parts.push(`<circle cx="${px(x(p.x))}" cy="${px(y(p.y))}" r="2.5" fill="${series.color}"/>`);
    }
  }
  if (panel.note) parts.push(text(left + 12, top + 16, `fill="${AXIS}"`, panel.note));
  return parts;
}

/**
 * An SVG line chart, the one drawing code of the benchmarks' charts: panels of polylines over
 * linear or log axes with ticks and gridlines, a title and one legend row.
 */
export function lineChart(chart: LineChart): string {
  const { width, height, legend } = chart;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
  ];
  if (chart.title) parts.push(text(width / 2, 24, 'text-anchor="middle" font-size="16" font-weight="bold"', chart.title));
  for (const panel of chart.panels) parts.push(...panelParts(panel));
  legend.entries.forEach((entry, i) => {
    const lx = legend.x + i * legend.spacing;
    parts.push(
      line(lx, legend.y, lx + 24, legend.y, entry.color, ` stroke-width="2"${dashAttribute(entry.dash)}`),
      text(lx + 30, legend.y + 4, `fill="${AXIS}"`, entry.label),
    );
  });
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
