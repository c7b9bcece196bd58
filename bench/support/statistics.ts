/** The value at quantile `q` (0 to 1) of `values`: the sorted values' element at index ⌊q·n⌋ (for the median of an even count, the upper middle one). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** The median, the two middle values averaged for an even count. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export interface Point {
  x: number;
  y: number;
}

/** Least-squares polynomial of the given degree through the points (normal equations); coefficients from the constant up. */
export function fitPolynomial(points: readonly Point[], degree: number): number[] {
  const n = degree + 1;
  const a = Array.from({ length: n }, () => new Array<number>(n + 1).fill(0));
  for (const { x, y } of points) {
    for (let i = 0; i < n; i += 1) {
      for (let j = 0; j < n; j += 1) a[i][j] += x ** (i + j);
      a[i][n] += y * x ** i;
    }
  }
  for (let col = 0; col < n; col += 1) {
    for (let row = col + 1; row < n; row += 1) {
      const factor = a[row][col] / a[col][col];
      for (let k = col; k <= n; k += 1) a[row][k] -= factor * a[col][k];
    }
  }
  const coefficients = new Array<number>(n).fill(0);
  for (let row = n - 1; row >= 0; row -= 1) {
    let sum = a[row][n];
    for (let k = row + 1; k < n; k += 1) sum -= a[row][k] * coefficients[k];
    coefficients[row] = sum / a[row][row];
  }
  return coefficients;
}

export function evaluatePolynomial(coefficients: readonly number[], x: number): number {
  return coefficients.reduce((sum, c, i) => sum + c * x ** i, 0);
}

/** The share of the points' variance the fitted polynomial explains. */
export function rSquared(points: readonly Point[], coefficients: readonly number[]): number {
  const mean = points.reduce((sum, p) => sum + p.y, 0) / points.length;
  const total = points.reduce((sum, p) => sum + (p.y - mean) ** 2, 0);
  const residual = points.reduce((sum, p) => sum + (p.y - evaluatePolynomial(coefficients, p.x)) ** 2, 0);
  return 1 - residual / total;
}
