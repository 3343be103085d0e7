// Splitting an amount in proportion to weights, exactly: floor of each share, then the
// leftover cents one each to the largest remainders (ties to the earlier item). BigInt keeps
// amount × weight exact far beyond 2^53.

export function largestRemainder(total: number, weights: number[]): number[] {
  if (weights.length === 0) return [];
  const ws = weights.map((w) => BigInt(Math.max(0, w)));
  let sum = ws.reduce((a, b) => a + b, 0n);
  const effective = sum === 0n ? ws.map(() => 1n) : ws;
  if (sum === 0n) sum = BigInt(ws.length);
  const t = BigInt(total);
  const shares = effective.map((w) => (t * w) / sum);
  const remainders = effective.map((w, i) => ({ i, r: (t * w) % sum }));
  let left = Number(t - shares.reduce((a, b) => a + b, 0n));
  remainders.sort((a, b) => (a.r === b.r ? a.i - b.i : a.r > b.r ? -1 : 1));
  const out = shares.map(Number);
  for (const { i } of remainders) {
    if (left === 0) break;
    out[i]! += 1;
    left -= 1;
  }
  return out;
}
