//! Script values, expressions and the pgbench random functions.
//!
//! Semantics follow PostgreSQL 16 `pgbench.c` (evalStandardFunc and friends):
//! integer arithmetic is checked and truncating, mixing in a float makes the
//! result a float, and every failure is a runtime error of the transaction
//! rather than a panic. Evaluation never allocates, so it can run in the hot
//! loop.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    /// A variable that no `set` has assigned yet.
    Unset,
}

/// A runtime script failure; static text so the error path stays allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptError(pub &'static str);

pub type EvalResult = Result<Value, ScriptError>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl Op {
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "+" => Op::Add,
            "-" => Op::Sub,
            "*" => Op::Mul,
            "/" => Op::Div,
            "%" => Op::Mod,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Random,
    RandomGaussian,
    RandomExponential,
    RandomZipfian,
    Abs,
    Least,
    Greatest,
    Int,
    Double,
    Sqrt,
}

impl Func {
    /// Every function, in the order the script dialect documents them.
    pub const ALL: [Func; 10] = [
        Func::Random,
        Func::RandomGaussian,
        Func::RandomExponential,
        Func::RandomZipfian,
        Func::Abs,
        Func::Least,
        Func::Greatest,
        Func::Int,
        Func::Double,
        Func::Sqrt,
    ];

    /// The name a script calls the function by.
    pub fn name(self) -> &'static str {
        match self {
            Func::Random => "random",
            Func::RandomGaussian => "random_gaussian",
            Func::RandomExponential => "random_exponential",
            Func::RandomZipfian => "random_zipfian",
            Func::Abs => "abs",
            Func::Least => "least",
            Func::Greatest => "greatest",
            Func::Int => "int",
            Func::Double => "double",
            Func::Sqrt => "sqrt",
        }
    }

    pub fn parse(s: &str) -> Option<Func> {
        Func::ALL.into_iter().find(|f| f.name() == s)
    }

    /// Accepted argument counts (min, max); checked once when the plan is built.
    pub fn arity(self) -> (usize, usize) {
        match self {
            Func::Random => (2, 2),
            Func::RandomGaussian | Func::RandomExponential | Func::RandomZipfian => (3, 3),
            Func::Abs | Func::Int | Func::Double | Func::Sqrt => (1, 1),
            Func::Least | Func::Greatest => (1, usize::MAX),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Int(i64),
    Float(f64),
    Var(usize),
    Neg(Box<Expr>),
    Op(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

const BIGINT_RANGE: ScriptError = ScriptError("bigint out of range");
const DIV_ZERO: ScriptError = ScriptError("division by zero");

// ---------------------------------------------------------------------------
// PRNG

/// Deterministic per-session generator, with pgbench's derived distributions.
#[derive(Clone, Debug)]
pub struct Prng(Xoshiro256PlusPlus);

impl Prng {
    /// Independent streams per (seed, session, purpose): picking transactions,
    /// evaluating functions and open-loop arrivals must not perturb each other,
    /// so the same seed reproduces the same choices whatever the rate.
    pub fn new(seed: u64, session: u64, stream: u64) -> Prng {
        let mixed =
            splitmix64(seed ^ splitmix64(session.wrapping_mul(0x9E37_79B9).wrapping_add(stream)));
        Prng(Xoshiro256PlusPlus::seed_from_u64(mixed))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1) with 53 random bits (like pg_prng_double).
    #[inline]
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, range] without modulo bias (pg_prng_uint64_range's masking loop).
    #[inline]
    pub fn below_inclusive(&mut self, range: u64) -> u64 {
        if range == 0 {
            return 0;
        }
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return v;
            }
        }
    }

    /// Standard normal via Box-Muller, as pg_prng_double_normal.
    fn normal(&mut self) -> f64 {
        // Box-Muller wants (0, 1]: never take log(0).
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }

    /// Exponential inter-arrival time with the given mean (open-loop scheduling).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -(1.0 - self.double()).ln() * mean
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;
pub const MIN_ZIPFIAN_PARAM: f64 = 1.001;
pub const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

/// Checks pgbench applies to every random*() range: lb <= ub and ub - lb + 1 fits.
fn check_range(lb: i64, ub: i64) -> Result<u64, ScriptError> {
    if lb > ub {
        return Err(ScriptError("empty range given to random"));
    }
    match ub.checked_sub(lb).and_then(|d| d.checked_add(1)) {
        Some(_) => Ok((ub as i128 - lb as i128) as u64),
        None => Err(ScriptError("random range is too large")),
    }
}

pub fn random_uniform(rng: &mut Prng, lb: i64, ub: i64) -> Result<i64, ScriptError> {
    let span = check_range(lb, ub)?;
    Ok(lb.wrapping_add(rng.below_inclusive(span) as i64))
}

pub fn random_exponential(
    rng: &mut Prng,
    lb: i64,
    ub: i64,
    param: f64,
) -> Result<i64, ScriptError> {
    let span = check_range(lb, ub)?;
    // NaN fails too.
    if param.is_nan() || param <= 0.0 {
        return Err(ScriptError(
            "exponential parameter must be greater than zero",
        ));
    }
    let cut = (-param).exp();
    let uniform = 1.0 - rng.double();
    // In [0, 1): the inner expression lies in (cut, 1].
    let r = -(cut + (1.0 - cut) * uniform).ln() / param;
    Ok(lb.wrapping_add(((span as f64 + 1.0) * r) as i64).min(ub))
}

pub fn random_gaussian(rng: &mut Prng, lb: i64, ub: i64, param: f64) -> Result<i64, ScriptError> {
    let span = check_range(lb, ub)?;
    if param.is_nan() || param < MIN_GAUSSIAN_PARAM {
        return Err(ScriptError("gaussian parameter must be at least 2.0"));
    }
    let stdev = loop {
        let s = rng.normal();
        if s >= -param && s < param {
            break s;
        }
    };
    let r = (stdev + param) / (param * 2.0);
    Ok(lb.wrapping_add(((span as f64 + 1.0) * r) as i64).min(ub))
}

/// pgbench >= 13 computeIterativeZipfian: Devroye's rejection method
/// ("Non-Uniform Random Variate Generation", p. 550-551), returns 1..=n.
fn iterative_zipfian(rng: &mut Prng, n: f64, s: f64) -> i64 {
    if n <= 1.0 {
        return 1;
    }
    let b = 2f64.powf(s - 1.0);
    loop {
        let u = rng.double();
        let v = rng.double();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        // Reject if too large or out of bounds (u == 0 gives x = inf, rejected).
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n {
            return x as i64;
        }
    }
}

pub fn random_zipfian(rng: &mut Prng, lb: i64, ub: i64, s: f64) -> Result<i64, ScriptError> {
    let span = check_range(lb, ub)?;
    if !(MIN_ZIPFIAN_PARAM..=MAX_ZIPFIAN_PARAM).contains(&s) {
        return Err(ScriptError(
            "zipfian parameter must be in range [1.001, 1000]",
        ));
    }
    let n = span as f64 + 1.0;
    Ok(lb.wrapping_add(iterative_zipfian(rng, n, s) - 1))
}

// ---------------------------------------------------------------------------
// Evaluation

/// pgbench coerceToInt: floats truncate, but only when they fit.
#[inline]
pub fn to_int(v: Value) -> Result<i64, ScriptError> {
    match v {
        Value::Int(i) => Ok(i),
        Value::Float(f) => {
            // FLOAT8_FITS_IN_INT64
            if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
                Err(ScriptError("double to int overflow"))
            } else {
                Ok(f as i64)
            }
        }
        Value::Unset => Err(UNSET),
    }
}

#[inline]
pub fn to_float(v: Value) -> Result<f64, ScriptError> {
    match v {
        Value::Int(i) => Ok(i as f64),
        Value::Float(f) => Ok(f),
        Value::Unset => Err(UNSET),
    }
}

pub const UNSET: ScriptError = ScriptError("variable used before it was set");

fn arith(op: Op, a: Value, b: Value) -> EvalResult {
    if op == Op::Mod {
        // pgbench coerces both operands of % to integers.
        let (l, r) = (to_int(a)?, to_int(b)?);
        return match r {
            0 => Err(DIV_ZERO),
            // i64::MIN % -1 overflows in hardware; the answer is 0 anyway.
            -1 => Ok(Value::Int(0)),
            _ => Ok(Value::Int(l % r)),
        };
    }
    match (a, b) {
        (Value::Int(l), Value::Int(r)) => {
            let v = match op {
                Op::Add => l.checked_add(r),
                Op::Sub => l.checked_sub(r),
                Op::Mul => l.checked_mul(r),
                Op::Div => {
                    if r == 0 {
                        return Err(DIV_ZERO);
                    }
                    l.checked_div(r)
                }
                Op::Mod => unreachable!(),
            };
            v.map(Value::Int).ok_or(BIGINT_RANGE)
        }
        _ => {
            let (l, r) = (to_float(a)?, to_float(b)?);
            Ok(Value::Float(match op {
                Op::Add => l + r,
                Op::Sub => l - r,
                Op::Mul => l * r,
                Op::Div => {
                    // pgbench would yield +-inf here; an infinite value cannot be
                    // bound to any useful parameter, so fail early and visibly.
                    if r == 0.0 {
                        return Err(DIV_ZERO);
                    }
                    l / r
                }
                Op::Mod => unreachable!(),
            }))
        }
    }
}

pub fn eval(e: &Expr, slots: &[Value], rng: &mut Prng) -> EvalResult {
    match e {
        Expr::Int(i) => Ok(Value::Int(*i)),
        Expr::Float(f) => Ok(Value::Float(*f)),
        Expr::Var(s) => match slots[*s] {
            Value::Unset => Err(UNSET),
            v => Ok(v),
        },
        // pgbench parses unary minus as 0 - x, so -i64::MIN is an overflow error.
        Expr::Neg(x) => match eval(x, slots, rng)? {
            Value::Int(i) => i.checked_neg().map(Value::Int).ok_or(BIGINT_RANGE),
            Value::Float(f) => Ok(Value::Float(-f)),
            Value::Unset => Err(UNSET),
        },
        Expr::Op(op, a, b) => {
            let a = eval(a, slots, rng)?;
            let b = eval(b, slots, rng)?;
            arith(*op, a, b)
        }
        Expr::Call(f, args) => call(*f, args, slots, rng),
    }
}

fn call(f: Func, args: &[Expr], slots: &[Value], rng: &mut Prng) -> EvalResult {
    let arg = |i: usize, rng: &mut Prng| eval(&args[i], slots, rng);
    match f {
        Func::Random => {
            let lb = to_int(arg(0, rng)?)?;
            let ub = to_int(arg(1, rng)?)?;
            random_uniform(rng, lb, ub).map(Value::Int)
        }
        Func::RandomGaussian | Func::RandomExponential | Func::RandomZipfian => {
            let lb = to_int(arg(0, rng)?)?;
            let ub = to_int(arg(1, rng)?)?;
            let p = to_float(arg(2, rng)?)?;
            match f {
                Func::RandomGaussian => random_gaussian(rng, lb, ub, p),
                Func::RandomExponential => random_exponential(rng, lb, ub, p),
                _ => random_zipfian(rng, lb, ub, p),
            }
            .map(Value::Int)
        }
        Func::Abs => match arg(0, rng)? {
            Value::Int(i) => i.checked_abs().map(Value::Int).ok_or(BIGINT_RANGE),
            Value::Float(x) => Ok(Value::Float(x.abs())),
            Value::Unset => Err(UNSET),
        },
        Func::Int => to_int(arg(0, rng)?).map(Value::Int),
        Func::Double => to_float(arg(0, rng)?).map(Value::Float),
        Func::Sqrt => to_float(arg(0, rng)?).map(|x| Value::Float(x.sqrt())),
        Func::Least | Func::Greatest => {
            // As pgbench: one float argument makes the whole comparison float.
            // Track the integer and the float extreme in one pass so nothing
            // is buffered and random() arguments are drawn once.
            let least = f == Func::Least;
            let (mut bi, mut bf, mut any_float) = (0i64, 0f64, false);
            for (k, a) in args.iter().enumerate() {
                let v = eval(a, slots, rng)?;
                let x = to_float(v)?;
                if let Value::Int(i) = v {
                    if k == 0 || (least && i < bi) || (!least && i > bi) {
                        bi = i;
                    }
                } else {
                    any_float = true;
                }
                if k == 0 || (least && x < bf) || (!least && x > bf) {
                    bf = x;
                }
            }
            Ok(if any_float {
                Value::Float(bf)
            } else {
                Value::Int(bi)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(e: &Expr) -> EvalResult {
        let mut r = Prng::new(1, 0, 0);
        eval(e, &[Value::Int(7), Value::Float(2.5), Value::Unset], &mut r)
    }
    fn i(v: i64) -> Expr {
        Expr::Int(v)
    }
    fn f(v: f64) -> Expr {
        Expr::Float(v)
    }

    #[test]
    fn every_function_parses_by_its_name() {
        for f in Func::ALL {
            assert_eq!(Func::parse(f.name()), Some(f));
        }
        assert_eq!(Func::parse("nope"), None);
    }
    fn op(o: Op, a: Expr, b: Expr) -> Expr {
        Expr::Op(o, Box::new(a), Box::new(b))
    }
    fn call(fun: Func, args: Vec<Expr>) -> Expr {
        Expr::Call(fun, args)
    }

    #[test]
    fn int_arithmetic() {
        assert_eq!(ev(&op(Op::Add, i(2), i(3))), Ok(Value::Int(5)));
        assert_eq!(ev(&op(Op::Sub, i(2), i(3))), Ok(Value::Int(-1)));
        assert_eq!(ev(&op(Op::Mul, Expr::Var(0), i(3))), Ok(Value::Int(21)));
        assert_eq!(ev(&op(Op::Div, i(7), i(2))), Ok(Value::Int(3)));
        assert_eq!(ev(&op(Op::Div, i(-7), i(2))), Ok(Value::Int(-3)));
        assert_eq!(ev(&op(Op::Mod, i(-7), i(3))), Ok(Value::Int(-1)));
        assert_eq!(ev(&op(Op::Mod, i(i64::MIN), i(-1))), Ok(Value::Int(0)));
        assert_eq!(ev(&Expr::Neg(Box::new(i(4)))), Ok(Value::Int(-4)));
    }

    #[test]
    fn float_arithmetic() {
        assert_eq!(ev(&op(Op::Add, i(2), f(0.5))), Ok(Value::Float(2.5)));
        assert_eq!(ev(&op(Op::Div, i(7), f(2.0))), Ok(Value::Float(3.5)));
        assert_eq!(ev(&op(Op::Mul, Expr::Var(1), i(2))), Ok(Value::Float(5.0)));
        assert_eq!(ev(&op(Op::Mod, f(7.9), i(3))), Ok(Value::Int(1)));
    }

    #[test]
    fn runtime_errors() {
        assert_eq!(ev(&op(Op::Div, i(1), i(0))), Err(DIV_ZERO));
        assert_eq!(ev(&op(Op::Mod, i(1), i(0))), Err(DIV_ZERO));
        assert_eq!(ev(&op(Op::Div, f(1.0), i(0))), Err(DIV_ZERO));
        assert_eq!(ev(&op(Op::Add, i(i64::MAX), i(1))), Err(BIGINT_RANGE));
        assert_eq!(ev(&op(Op::Div, i(i64::MIN), i(-1))), Err(BIGINT_RANGE));
        assert_eq!(ev(&Expr::Neg(Box::new(i(i64::MIN)))), Err(BIGINT_RANGE));
        assert_eq!(ev(&Expr::Var(2)), Err(UNSET));
        assert!(ev(&call(Func::Int, vec![f(1e300)])).is_err());
        assert!(ev(&call(Func::Random, vec![i(5), i(1)])).is_err());
        assert!(ev(&call(Func::Random, vec![i(i64::MIN), i(i64::MAX)])).is_err());
        assert!(ev(&call(Func::RandomGaussian, vec![i(1), i(10), f(1.9)])).is_err());
        assert!(ev(&call(Func::RandomExponential, vec![i(1), i(10), f(0.0)])).is_err());
        assert!(ev(&call(Func::RandomZipfian, vec![i(1), i(10), f(1.0)])).is_err());
        assert!(ev(&call(Func::RandomZipfian, vec![i(1), i(10), f(1001.0)])).is_err());
    }

    #[test]
    fn functions() {
        assert_eq!(ev(&call(Func::Abs, vec![i(-3)])), Ok(Value::Int(3)));
        assert_eq!(ev(&call(Func::Abs, vec![f(-3.5)])), Ok(Value::Float(3.5)));
        assert_eq!(
            ev(&call(Func::Least, vec![i(3), i(-1), i(2)])),
            Ok(Value::Int(-1))
        );
        assert_eq!(
            ev(&call(Func::Greatest, vec![i(3), i(-1), i(2)])),
            Ok(Value::Int(3))
        );
        assert_eq!(
            ev(&call(Func::Least, vec![i(3), f(2.5)])),
            Ok(Value::Float(2.5))
        );
        assert_eq!(
            ev(&call(Func::Greatest, vec![i(3), f(2.5)])),
            Ok(Value::Float(3.0))
        );
        assert_eq!(ev(&call(Func::Int, vec![f(-2.9)])), Ok(Value::Int(-2)));
        assert_eq!(ev(&call(Func::Double, vec![i(2)])), Ok(Value::Float(2.0)));
        assert_eq!(ev(&call(Func::Sqrt, vec![i(16)])), Ok(Value::Float(4.0)));
        let r = ev(&call(
            Func::Least,
            vec![call(Func::Random, vec![i(1), i(1000)]), f(2000.0)],
        ));
        match r {
            Ok(Value::Float(x)) => assert!((1.0..=1000.0).contains(&x)),
            other => panic!("{other:?}"),
        }
    }

    fn sample(n: usize, seed: u64, mut g: impl FnMut(&mut Prng) -> i64) -> Vec<i64> {
        let mut r = Prng::new(seed, 3, 1);
        (0..n).map(|_| g(&mut r)).collect()
    }

    fn mean(v: &[i64]) -> f64 {
        v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
    }

    #[test]
    fn deterministic() {
        let a = sample(1000, 42, |r| random_uniform(r, 1, 1_000_000).unwrap());
        let b = sample(1000, 42, |r| random_uniform(r, 1, 1_000_000).unwrap());
        let c = sample(1000, 43, |r| random_uniform(r, 1, 1_000_000).unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Different sessions and streams differ too.
        let mut s0 = Prng::new(42, 0, 0);
        let mut s1 = Prng::new(42, 1, 0);
        let mut s2 = Prng::new(42, 0, 1);
        let x = s0.next_u64();
        assert_ne!(x, s1.next_u64());
        assert_ne!(x, s2.next_u64());
    }

    #[test]
    fn uniform() {
        let v = sample(200_000, 1, |r| random_uniform(r, 10, 20).unwrap());
        assert!(v.iter().all(|&x| (10..=20).contains(&x)));
        assert!((mean(&v) - 15.0).abs() < 0.05);
        for k in 10..=20 {
            let c = v.iter().filter(|&&x| x == k).count() as f64 / v.len() as f64;
            assert!((c - 1.0 / 11.0).abs() < 0.005, "{k}: {c}");
        }
        assert_eq!(
            sample(10, 1, |r| random_uniform(r, 5, 5).unwrap()),
            vec![5; 10]
        );
        let w = sample(10_000, 2, |r| {
            random_uniform(r, -(1 << 61), 1 << 61).unwrap()
        });
        assert!(w.iter().any(|&x| x < 0) && w.iter().any(|&x| x > 0));
    }

    #[test]
    fn exponential() {
        let v = sample(200_000, 5, |r| random_exponential(r, 1, 100, 5.0).unwrap());
        assert!(v.iter().all(|&x| (1..=100).contains(&x)));
        // Decreasing density: the first decile holds 1 - e^-0.5 / (1 - e^-5) ~ 39.6%.
        let first = v.iter().filter(|&&x| x <= 10).count() as f64 / v.len() as f64;
        let expect = (1.0 - (-0.5f64).exp()) / (1.0 - (-5.0f64).exp());
        assert!((first - expect).abs() < 0.01, "{first} vs {expect}");
        let last = v.iter().filter(|&&x| x > 90).count() as f64 / v.len() as f64;
        assert!(last < first / 10.0);
    }

    #[test]
    fn gaussian() {
        let v = sample(200_000, 6, |r| random_gaussian(r, 1, 100, 4.0).unwrap());
        assert!(v.iter().all(|&x| (1..=100).contains(&x)));
        assert!((mean(&v) - 50.5).abs() < 0.2, "{}", mean(&v));
        // stdev of the range is 100 / (2 * 4) = 12.5: about 68% within +-12.5.
        let within = v
            .iter()
            .filter(|&&x| (x as f64 - 50.5).abs() <= 12.5)
            .count() as f64
            / v.len() as f64;
        assert!((within - 0.68).abs() < 0.03, "{within}");
    }

    #[test]
    fn zipfian() {
        for s in [1.5f64, 2.0, 1.07] {
            let v = sample(400_000, 7, |r| random_zipfian(r, 1, 1000, s).unwrap());
            assert!(v.iter().all(|&x| (1..=1000).contains(&x)));
            let c1 = v.iter().filter(|&&x| x == 1).count() as f64;
            let c2 = v.iter().filter(|&&x| x == 2).count() as f64;
            let c3 = v.iter().filter(|&&x| x == 3).count() as f64;
            assert!(c1 > c2 && c2 > c3);
            let ratio = c1 / c2;
            let expect = 2f64.powf(s);
            assert!(
                (ratio / expect - 1.0).abs() < 0.05,
                "s={s}: {ratio} vs {expect}"
            );
        }
        // Offset range.
        let v = sample(10_000, 8, |r| random_zipfian(r, 100, 109, 2.0).unwrap());
        assert!(v.iter().all(|&x| (100..=109).contains(&x)));
        assert_eq!(*v.iter().min().unwrap(), 100);
    }
}
