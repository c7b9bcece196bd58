/**
 * The UTC windows the limits count in, as the keys of a counter document's fields: a minute
 * (`202612011432`), a day (`20261201`) and a month (`202612`), and when each ends.
 */
export interface Windows {
  minute: string;
  day: string;
  month: string;
  minuteEnds: Date;
  dayEnds: Date;
  monthEnds: Date;
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

export function windowsAt(now: Date): Windows {
  const y = now.getUTCFullYear();
  const mo = now.getUTCMonth();
  const d = now.getUTCDate();
  const month = `${y}${pad(mo + 1)}`;
  const day = `${month}${pad(d)}`;
  const minute = `${day}${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}`;
  const minuteStart = Math.floor(now.getTime() / 60_000) * 60_000;
  return {
    minute,
    day,
    month,
    minuteEnds: new Date(minuteStart + 60_000),
    dayEnds: new Date(Date.UTC(y, mo, d + 1)),
    monthEnds: new Date(Date.UTC(y, mo + 1, 1)),
  };
}

/** `20261201` as the API shows a day: `2026-12-01`. */
export function isoDay(dayKey: string): string {
  return `${dayKey.slice(0, 4)}-${dayKey.slice(4, 6)}-${dayKey.slice(6, 8)}`;
}
