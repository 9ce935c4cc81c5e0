function mean(xs) {
  let total = 0;
  for (const x of xs) total += x;
  return total / xs.length;
}

function clamp(x, lo, hi) {
  if (x < lo) return lo;
  if (x > hi) return hi;
  return x;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

module.exports = { mean, clamp, median };
