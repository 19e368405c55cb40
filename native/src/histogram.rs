//! Log-linear latency histograms (HdrHistogram layout) with bounded relative error.
//!
//! A [`LatencyHistogram`] counts nanosecond latencies in the bucket layout of Gil Tene's
//! HdrHistogram with 2 significant decimal digits: 256 sub-buckets, lowest discernible value
//! 1 ns. Values below 256 ns get a bucket of their own; above, every power of two is split into
//! 128 equal buckets, so a bucket `[lo, hi]` is at most `lo / 128` wide (< 0.79 % of its
//! values, < 0.4 % from its midpoint). The histogram grows to any value up to
//! [`MAX_VALUE_NS`].
//!
//! Histograms leave the engine as self-describing rows `(lo_ns, hi_ns, count)`, one per
//! non-empty bucket: two histograms with this layout merge exactly by summing the counts of
//! identical rows, which is what Python's `wannabet.analysis.histogram` does (it rebuilds the
//! same layout from raw values without the engine).

use hdrhistogram::Histogram;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Significant decimal digits kept: 2 gives 2^8 = 256 sub-buckets (the smallest power of two
/// at or above 2 · 10^2), hence a relative bucket width of at most 1/128.
pub const SIGNIFICANT_DIGITS: u8 = 2;

/// Largest latency counted as itself (2^63 - 1 ns, about 292 years): HdrHistogram's values
/// are signed 64-bit, and above it the top bin's highest value would saturate at `u64::MAX`
/// below the values it holds.
pub const MAX_VALUE_NS: u64 = i64::MAX as u64;

/// Counts of nanosecond latencies in HdrHistogram buckets (2 significant digits, auto-resizing).
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        // new() is auto-resizing with a lowest discernible value of 1; it fails only for
        // sigfig > 5.
        let inner = Histogram::new(SIGNIFICANT_DIGITS).expect("2 significant digits is valid");
        Self { inner }
    }

    /// An empty histogram of the same layout whose counts already reach `max_ns`, so that
    /// recording values up to it never allocates (it still grows past it).
    pub fn with_max(max_ns: u64) -> Self {
        let mut inner = Histogram::new_with_max(max_ns.clamp(2, MAX_VALUE_NS), SIGNIFICANT_DIGITS)
            .expect("a maximum of at least 2 with 2 significant digits is valid");
        inner.auto(true);
        Self { inner }
    }

    /// Counts one latency of `ns` nanoseconds; one above [`MAX_VALUE_NS`] counts as that.
    pub fn record(&mut self, ns: u64) {
        // With auto-resize the only error is a counts array longer than usize, which a u64
        // value cannot need (at most 64 buckets of 128 sub-buckets).
        self.inner
            .record(ns.min(MAX_VALUE_NS))
            .expect("an auto-resizing histogram records any u64");
    }

    /// Adds the counts of `other` (a histogram of the same layout), as if its values had been
    /// recorded here.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.inner
            .add(&other.inner)
            .expect("an auto-resizing histogram adds one of the same layout");
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The non-empty buckets in increasing order: lowest value, highest value (both inclusive,
    /// HdrHistogram's lowest- and highest-equivalent values) and count.
    pub fn buckets(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        let mut lo = Vec::new();
        let mut hi = Vec::new();
        let mut count = Vec::new();
        for step in self.inner.iter_recorded() {
            // value_iterated_to is the highest equivalent value of the bucket.
            let top = step.value_iterated_to();
            lo.push(self.inner.lowest_equivalent(top));
            hi.push(self.inner.highest_equivalent(top));
            count.push(step.count_at_value());
        }
        (lo, hi, count)
    }
}

/// Histogram of `values_ns` as a dict of three uint64 arrays `lo_ns`, `hi_ns`, `count` (the
/// non-empty buckets). Exposed so that the tests can check that the Python layout equals the
/// engine's; the engine builds its histograms while it runs. A value above [`MAX_VALUE_NS`]
/// raises ValueError, as in Python.
#[pyfunction]
pub fn histogram_of<'py>(
    py: Python<'py>,
    values_ns: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let values = values_ns
        .as_slice()
        .map_err(|_| PyValueError::new_err("values_ns must be a contiguous uint64 array"))?;
    if let Some(i) = values.iter().position(|&v| v > MAX_VALUE_NS) {
        return Err(PyValueError::new_err(format!(
            "values_ns must be at most {MAX_VALUE_NS} (2**63 - 1), got {} at index {i}",
            values[i]
        )));
    }
    let (lo, hi, count) = py.detach(|| {
        let mut h = LatencyHistogram::new();
        for &v in values {
            h.record(v);
        }
        h.buckets()
    });
    let d = PyDict::new(py);
    d.set_item("lo_ns", PyArray1::from_vec(py, lo))?;
    d.set_item("hi_ns", PyArray1::from_vec(py, hi))?;
    d.set_item("count", PyArray1::from_vec(py, count))?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random latencies spread over many orders of magnitude (1 ns to
    /// about 10^11 ns), without a dependency: splitmix64, then a random exponent.
    fn latencies(seed: u64, n: usize) -> Vec<u64> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        (0..n)
            .map(|_| {
                let bits = next() % 38; // up to 2^37 ns, about 137 s
                let mantissa = next();
                if bits == 0 {
                    0
                } else {
                    (1u64 << (bits - 1)) | (mantissa & ((1u64 << (bits - 1)) - 1))
                }
            })
            .collect()
    }

    fn histogram(values: &[u64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for &v in values {
            h.record(v);
        }
        h
    }

    #[test]
    fn merge_equals_recording_the_union() {
        let a = latencies(1, 5_000);
        let b = latencies(2, 7_000);
        // b's largest values exceed a's: the merge must resize.
        let mut b_big = b.clone();
        b_big.push(3_600 * 1_000_000_000);
        let mut merged = histogram(&a);
        merged.merge(&histogram(&b_big));
        let union: Vec<u64> = a.iter().chain(b_big.iter()).copied().collect();
        assert_eq!(merged.buckets(), histogram(&union).buckets());
        assert_eq!(merged.len(), union.len() as u64);
        // And in the other direction (small into a larger one).
        let mut other = histogram(&b_big);
        other.merge(&histogram(&a));
        assert_eq!(other.buckets(), merged.buckets());
    }

    #[test]
    fn every_value_falls_inside_its_bucket() {
        let values = latencies(3, 20_000);
        for &v in &values {
            let (lo, hi, count) = histogram(&[v]).buckets();
            assert_eq!(count, vec![1], "value {v}");
            assert!(
                lo[0] <= v && v <= hi[0],
                "{v} outside [{}, {}]",
                lo[0],
                hi[0]
            );
        }
        // The buckets of many values are ordered, disjoint and count every value.
        let (lo, hi, count) = histogram(&values).buckets();
        assert_eq!(count.iter().sum::<u64>(), values.len() as u64);
        for i in 1..lo.len() {
            assert!(hi[i - 1] < lo[i], "buckets {} and {i} overlap", i - 1);
        }
    }

    #[test]
    fn relative_width_is_at_most_one_percent() {
        let mut values = latencies(4, 20_000);
        // The edges of the layout: exact values up to 255, then the first split buckets.
        values.extend([
            0,
            1,
            255,
            256,
            257,
            511,
            512,
            1_000,
            u64::MAX / 4,
            MAX_VALUE_NS,
        ]);
        let (lo, hi, _) = histogram(&values).buckets();
        for (&l, &h) in lo.iter().zip(&hi) {
            if l < 256 {
                assert_eq!(l, h, "values below 256 ns are exact");
            } else {
                let width = (h - l + 1) as f64;
                assert!(width / l as f64 <= 1.0 / 128.0, "[{l}, {h}] is too wide");
                assert!(width.log2().fract() == 0.0, "widths are powers of two");
            }
        }
    }

    #[test]
    fn values_above_the_maximum_count_in_the_top_bucket() {
        let (lo, hi, count) = histogram(&[MAX_VALUE_NS, MAX_VALUE_NS + 1, u64::MAX]).buckets();
        assert_eq!(count, vec![3]);
        assert_eq!(hi, vec![MAX_VALUE_NS]);
        assert_eq!(lo, vec![MAX_VALUE_NS - ((1 << 55) - 1)]);
    }

    #[test]
    fn a_presized_histogram_has_the_same_layout() {
        let values = latencies(5, 10_000);
        let mut h = LatencyHistogram::with_max(1_000_000);
        for &v in &values {
            h.record(v); // many exceed the presized maximum: it grows
        }
        assert_eq!(h.buckets(), histogram(&values).buckets());
        let mut m = LatencyHistogram::with_max(10_000_000_000);
        m.merge(&histogram(&values));
        assert_eq!(m.buckets(), histogram(&values).buckets());
    }

    #[test]
    fn known_buckets() {
        let (lo, hi, count) = histogram(&[7, 300, 301, 1_000_000]).buckets();
        // 300 and 301 share [300, 301] (width 2 between 256 and 511); 10^6 ns lies between
        // 2^19 and 2^20, where buckets are 2^12 = 4096 wide.
        assert_eq!(lo, vec![7, 300, 999_424]);
        assert_eq!(hi, vec![7, 301, 1_003_519]);
        assert_eq!(count, vec![1, 2, 1]);
    }
}
