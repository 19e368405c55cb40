//! Tails and quantiles of Student's t, F, chi-square and the normal distribution for the
//! Python analysis (`wannabet.analysis.distributions`), element by element over equal-length
//! arrays (the caller broadcasts).
//!
//! They live here rather than in `scipy.special` only because importing that package costs
//! `wannabet compare` about a quarter of a second; tests/analysis/test_distributions.py checks
//! every function against SciPy over seeded grids. Invalid parameters give NaN, as SciPy.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use statrs::distribution::{
    ChiSquared, Continuous, ContinuousCDF, FisherSnedecor, Normal, StudentsT,
};

/// Above this many degrees of freedom the t and F functions use their normal and chi-square
/// limits: statrs's incomplete beta loses accuracy as its parameter grows (1e-8 relative at
/// 1e7) and its continued fraction stops converging in reasonable time near 1e8, while the
/// limits' own error falls as 1 / df (below 1e-5 relative here, in p-values far smaller than
/// any decision needs). Analyses reach such df only with millions of samples.
const LIMIT_DF: f64 = 1e7;

/// P(Z > x) for a standard normal Z, accurate far into both tails.
pub fn norm_sf(x: f64) -> f64 {
    0.5 * libm::erfc(x / std::f64::consts::SQRT_2)
}

/// The standard normal quantile (statrs: Boost's inverse of erfc, accurate to a few ulps).
pub fn norm_ppf(q: f64) -> f64 {
    if q.is_nan() || !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    Normal::standard().inverse_cdf(q)
}

/// P(T > x) for Student's t with `df` degrees of freedom; `df = inf` is the normal.
pub fn t_sf(x: f64, df: f64) -> f64 {
    if x.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df > LIMIT_DF {
        return norm_sf(x);
    }
    match StudentsT::new(0.0, 1.0, df) {
        // The smaller tail is computed directly: it keeps its relative accuracy.
        Ok(t) if x >= 0.0 => t.sf(x),
        Ok(t) => 1.0 - t.sf(-x),
        Err(_) => f64::NAN,
    }
}

/// The `q` quantile of Student's t with `df` degrees of freedom.
pub fn t_ppf(q: f64, df: f64) -> f64 {
    if q.is_nan() || df.is_nan() || df <= 0.0 || !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    if df > LIMIT_DF {
        return norm_ppf(q);
    }
    if q == 0.0 {
        return f64::NEG_INFINITY;
    }
    if q == 1.0 {
        return f64::INFINITY;
    }
    let Ok(t) = StudentsT::new(0.0, 1.0, df) else {
        return f64::NAN;
    };
    // By symmetry, the upper quantile x > 0 of the smaller tail p: statrs's estimate, then
    // Newton steps on ln sf (nearly linear in the heavy tails of small df), kept inside a
    // bracket by bisection where a step would leave it.
    let (p, sign) = if q < 0.5 { (q, -1.0) } else { (1.0 - q, 1.0) };
    if p == 0.5 {
        return 0.0;
    }
    let target = p.ln();
    let (mut lo, mut hi) = (0.0_f64, f64::INFINITY);
    let mut x = -t.inverse_cdf(p);
    if !(x.is_finite() && x > 0.0) {
        x = 1.0;
    }
    for _ in 0..200 {
        let sf = t.sf(x);
        if sf == p {
            break;
        }
        if sf > p {
            lo = x;
        } else {
            hi = x;
        }
        let slope = -t.pdf(x) / sf; // d ln sf / dx
        let newton = x - (sf.ln() - target) / slope;
        if (newton - x).abs() <= 4.0 * f64::EPSILON * x {
            x = newton;
            break;
        }
        x = if newton > lo && newton < hi {
            newton
        } else if hi.is_finite() {
            0.5 * (lo + hi)
        } else {
            2.0 * x.max(1.0)
        };
    }
    sign * x
}

/// P(F > x) for F with (`dfn`, `dfd`) degrees of freedom; `dfd = inf` is the chi-square
/// limit chi2(dfn) / dfn.
pub fn f_sf(x: f64, dfn: f64, dfd: f64) -> f64 {
    if x.is_nan() || dfn.is_nan() || dfd.is_nan() || dfn <= 0.0 || dfd <= 0.0 {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 1.0;
    }
    if dfd > LIMIT_DF {
        return chi2_sf(dfn * x, dfn);
    }
    match FisherSnedecor::new(dfn, dfd) {
        Ok(f) => f.sf(x),
        Err(_) => f64::NAN,
    }
}

/// P(X > x) for chi-square with `df` degrees of freedom.
pub fn chi2_sf(x: f64, df: f64) -> f64 {
    if x.is_nan() || df.is_nan() || df <= 0.0 || df.is_infinite() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 1.0;
    }
    match ChiSquared::new(df) {
        Ok(c) => c.sf(x),
        Err(_) => f64::NAN,
    }
}

fn slice<'a>(a: &'a PyReadonlyArray1<'_, f64>, name: &str) -> PyResult<&'a [f64]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{name} must be a contiguous float64 array")))
}

fn same_length(lengths: &[usize]) -> PyResult<usize> {
    let n = lengths[0];
    if lengths.iter().any(|&m| m != n) {
        return Err(PyValueError::new_err(
            "the arrays must have the same length",
        ));
    }
    Ok(n)
}

/// `distribution(name, x, a, b)`: the function `name` (norm_sf, norm_ppf, t_sf, t_ppf, f_sf,
/// chi2_sf) element by element; `a` and `b` are its parameters (ignored where it has fewer).
#[pyfunction]
pub fn distribution<'py>(
    py: Python<'py>,
    name: &str,
    x: PyReadonlyArray1<'py, f64>,
    a: PyReadonlyArray1<'py, f64>,
    b: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (x, a, b) = (slice(&x, "x")?, slice(&a, "a")?, slice(&b, "b")?);
    let n = same_length(&[x.len(), a.len(), b.len()])?;
    let f: fn(f64, f64, f64) -> f64 = match name {
        "norm_sf" => |x, _, _| norm_sf(x),
        "norm_ppf" => |x, _, _| norm_ppf(x),
        "t_sf" => |x, a, _| t_sf(x, a),
        "t_ppf" => |x, a, _| t_ppf(x, a),
        "f_sf" => f_sf,
        "chi2_sf" => |x, a, _| chi2_sf(x, a),
        other => {
            return Err(PyValueError::new_err(format!(
                "no distribution function {other:?}"
            )))
        }
    };
    let out: Vec<f64> = (0..n).map(|i| f(x[i], a[i], b[i])).collect();
    Ok(PyArray1::from_vec(py, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Reference values from SciPy 1.17 (scipy.stats.t.sf etc.).
        assert!((t_sf(2.3, 7.5) - 0.026286448052184542).abs() < 1e-13);
        assert!((t_ppf(0.975, 4.2) - 2.7250727225923743).abs() < 1e-12);
        assert!((f_sf(3.1, 2.0, 17.3) - 0.0706906188129367).abs() < 1e-13);
        assert!((chi2_sf(5.5, 3.0) - 0.1386386173824151).abs() < 1e-13);
        assert!((norm_ppf(0.975) - 1.959963984540054).abs() < 1e-15);
        assert!((norm_sf(1.0) - 0.15865525393145707).abs() < 1e-16);
        assert!(t_sf(1.0, 0.0).is_nan() && t_ppf(1.5, 3.0).is_nan());
        assert_eq!(t_ppf(1.0, 3.0), f64::INFINITY);
        assert_eq!(t_ppf(0.5, 3.0), 0.0);
    }
}
