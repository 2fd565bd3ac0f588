"""Wilson intervals: tempcore's closed form against scipy's, bound by bound, over many (k, n) pairs.

``tempcore.diagnostics.stats.wilson_interval`` writes ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) /
(1 + z²/n)``; ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` computes the same
interval in another arrangement. Any bound that differs would change the bytes of existing outputs
(``--json``, reports), so the hand-written one stays unless this prints 0 differing bounds.

Pairs: every k of every n in 1..200, every 7th k of n = 1000, every 997th k of n = 12345; at 95% and
90% confidence. Needs scipy (not a dependency of tempcore; without it the script says so).

Usage: PYTHONPATH=src python benchmarks/wilson_scipy.py
"""

from __future__ import annotations

import numpy as np

from tempcore.diagnostics.stats import wilson_interval


def main() -> None:
    try:
        from scipy.stats import binomtest
    except ImportError:
        print("scipy is not installed: nothing to compare")
        return
    pairs = [(k, n) for n in range(1, 201) for k in range(n + 1)]
    pairs += [(k, 1000) for k in range(0, 1001, 7)] + [(k, 12345) for k in range(0, 12346, 997)]
    k = np.array([p[0] for p in pairs], dtype=float)
    n = np.array([p[1] for p in pairs], dtype=float)
    for confidence in (0.95, 0.9):
        low, high = wilson_interval(k, n, confidence)
        differ = one_ulp = 0
        largest = 0.0
        for i, (kk, nn) in enumerate(pairs):
            ci = binomtest(kk, nn).proportion_ci(confidence_level=confidence, method="wilson")
            for ours, theirs in ((low[i], ci.low), (high[i], ci.high)):
                if ours != theirs:
                    differ += 1
                    largest = max(largest, abs(ours - theirs))
                    one_ulp += abs(ours - theirs) <= np.spacing(max(abs(ours), abs(theirs)))
        total = 2 * len(pairs)
        print(f"confidence {confidence}: {len(pairs)} (k, n) pairs, {total} bounds: {differ} differ "
              f"({100 * differ / total:.1f}%), {one_ulp} of them by one ulp; largest difference {largest:.3g}")


if __name__ == "__main__":
    main()
