//! Script values, expressions and the pgbench random functions.
//!
//! Semantics follow PostgreSQL 16 `pgbench.c` (evalStandardFunc and friends):
//! integer arithmetic is checked and truncating, mixing in a float makes the
//! result a float, a float made an integer (`int()`, `%`, a function's integer
//! argument) is rounded with rint(), and every failure is a runtime error of the transaction
//! rather than a panic. Evaluation never allocates, so it can run in the hot
//! loop.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// SQL NULL: `NULL` in an expression, or a NULL column read by `\gset`.
    Null,
    /// A variable that no `set` has assigned yet.
    Unset,
}

impl Value {
    /// pgbench's valueTruth, used by `\if` and CASE: NULL counts as false.
    pub fn truth(self) -> Result<bool, ScriptError> {
        match self {
            Value::Bool(b) => Ok(b),
            Value::Int(i) => Ok(i != 0),
            Value::Float(f) => Ok(f != 0.0),
            Value::Null => Ok(false),
            Value::Unset => Err(UNSET),
        }
    }
}

impl std::fmt::Display for Value {
    /// The text pgbench substitutes for a variable in a simple-protocol query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            // Shortest text that reads back as the same double; PostgreSQL takes 1e300 too.
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::Null | Value::Unset => f.write_str("NULL"),
        }
    }
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
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl Op {
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "+" => Op::Add,
            "-" => Op::Sub,
            "*" => Op::Mul,
            "/" => Op::Div,
            "%" => Op::Mod,
            "=" => Op::Eq,
            "<>" | "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "&" => Op::BitAnd,
            "|" => Op::BitOr,
            "#" => Op::BitXor,
            "<<" => Op::Shl,
            ">>" => Op::Shr,
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
    Pi,
    Exp,
    Ln,
    Pow,
    Mod,
    Hash,
    HashFnv1a,
    HashMurmur2,
    Permute,
    Debug,
}

impl Func {
    /// Every function, in the order the script dialect documents them.
    pub const ALL: [Func; 20] = [
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
        Func::Pi,
        Func::Exp,
        Func::Ln,
        Func::Pow,
        Func::Mod,
        Func::Hash,
        Func::HashFnv1a,
        Func::HashMurmur2,
        Func::Permute,
        Func::Debug,
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
            Func::Pi => "pi",
            Func::Exp => "exp",
            Func::Ln => "ln",
            Func::Pow => "pow",
            Func::Mod => "mod",
            Func::Hash => "hash",
            Func::HashFnv1a => "hash_fnv1a",
            Func::HashMurmur2 => "hash_murmur2",
            Func::Permute => "permute",
            Func::Debug => "debug",
        }
    }

    pub fn parse(s: &str) -> Option<Func> {
        // `power` is pgbench's other name for `pow`.
        let s = if s == "power" { "pow" } else { s };
        Func::ALL.into_iter().find(|f| f.name() == s)
    }

    /// Accepted argument counts (min, max); checked once when the plan is built.
    pub fn arity(self) -> (usize, usize) {
        match self {
            Func::Random => (2, 2),
            Func::RandomGaussian | Func::RandomExponential | Func::RandomZipfian => (3, 3),
            Func::Abs | Func::Int | Func::Double | Func::Sqrt => (1, 1),
            Func::Exp | Func::Ln | Func::Debug => (1, 1),
            Func::Least | Func::Greatest => (1, usize::MAX),
            Func::Pi => (0, 0),
            Func::Pow | Func::Mod => (2, 2),
            // The seed defaults to :default_seed; the compiler passes it explicitly.
            Func::Hash | Func::HashFnv1a | Func::HashMurmur2 => (2, 2),
            Func::Permute => (3, 3),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
    Var(usize),
    Neg(Box<Expr>),
    /// Bitwise complement `~`.
    BitNot(Box<Expr>),
    Not(Box<Expr>),
    /// pgbench's `x IS NULL | TRUE | FALSE` (the right side is `Null` or `Bool`);
    /// `IS NOT` is `Not` around it.
    Is(Box<Expr>, Value),
    Op(Op, Box<Expr>, Box<Expr>),
    /// As pgbench: booleans only, a NULL on the left gives NULL, evaluated left to right and
    /// only as far as needed.
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// `CASE WHEN c THEN v ... [ELSE e] END`; no ELSE gives NULL.
    Case(Vec<(Expr, Expr)>, Option<Box<Expr>>),
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

/// pgbench coerceToInt: a double is rounded with rint() (to the nearest integer, halves to the
/// even one: int(2.5) is 2, int(3.5) is 4), and refused when it is NaN or does not fit.
#[inline]
pub fn to_int(v: Value) -> Result<i64, ScriptError> {
    match v {
        Value::Int(i) => Ok(i),
        Value::Float(f) => {
            let r = f.round_ties_even();
            // FLOAT8_FITS_IN_INT64 (a NaN is in no range)
            if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
                Err(ScriptError("double to int overflow"))
            } else {
                Ok(r as i64)
            }
        }
        Value::Bool(_) => Err(ScriptError("cannot coerce boolean to int")),
        Value::Null => Err(ScriptError("cannot coerce NULL to int")),
        Value::Unset => Err(UNSET),
    }
}

#[inline]
pub fn to_float(v: Value) -> Result<f64, ScriptError> {
    match v {
        Value::Int(i) => Ok(i as f64),
        Value::Float(f) => Ok(f),
        Value::Bool(_) => Err(ScriptError("cannot coerce boolean to double")),
        Value::Null => Err(ScriptError("cannot coerce NULL to double")),
        Value::Unset => Err(UNSET),
    }
}

/// pgbench coerceToBool, for NOT, AND and OR: only a boolean is one (NOT 1 and 1 AND 2 are
/// errors there too); `\if` and CASE use [`Value::truth`] instead, which takes numbers.
fn to_bool(v: Value) -> Result<bool, ScriptError> {
    match v {
        Value::Bool(b) => Ok(b),
        Value::Int(_) => Err(ScriptError("cannot coerce int to boolean")),
        Value::Float(_) => Err(ScriptError("cannot coerce double to boolean")),
        Value::Null => Err(ScriptError("cannot coerce NULL to boolean")),
        Value::Unset => Err(UNSET),
    }
}

pub const UNSET: ScriptError = ScriptError("variable used before it was set");

fn arith(op: Op, a: Value, b: Value) -> EvalResult {
    // As pgbench: a NULL operand makes the result NULL.
    if a == Value::Null || b == Value::Null {
        return Ok(Value::Null);
    }
    match op {
        Op::Mod => {
            // pgbench coerces both operands of % to integers.
            let (l, r) = (to_int(a)?, to_int(b)?);
            return match r {
                0 => Err(DIV_ZERO),
                // i64::MIN % -1 overflows in hardware; the answer is 0 anyway.
                -1 => Ok(Value::Int(0)),
                _ => Ok(Value::Int(l % r)),
            };
        }
        Op::BitAnd | Op::BitOr | Op::BitXor | Op::Shl | Op::Shr => {
            let (l, r) = (to_int(a)?, to_int(b)?);
            // Shifts take the count modulo 64, as the C shift pgbench uses does on x86-64.
            return Ok(Value::Int(match op {
                Op::BitAnd => l & r,
                Op::BitOr => l | r,
                Op::BitXor => l ^ r,
                Op::Shl => l.wrapping_shl(r as u32),
                _ => l.wrapping_shr(r as u32),
            }));
        }
        Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let ord = match (a, b) {
                (Value::Int(l), Value::Int(r)) => l.partial_cmp(&r),
                _ => to_float(a)?.partial_cmp(&to_float(b)?),
            };
            use std::cmp::Ordering::*;
            return Ok(Value::Bool(match (op, ord) {
                (Op::Ne, o) => o != Some(Equal),
                (_, None) => false,
                (Op::Eq, Some(o)) => o == Equal,
                (Op::Lt, Some(o)) => o == Less,
                (Op::Le, Some(o)) => o != Greater,
                (Op::Gt, Some(o)) => o == Greater,
                (_, Some(o)) => o != Less,
            }));
        }
        _ => {}
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
                _ => unreachable!(),
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
                _ => unreachable!(),
            }))
        }
    }
}

pub fn eval(e: &Expr, slots: &[Value], rng: &mut Prng) -> EvalResult {
    match e {
        Expr::Int(i) => Ok(Value::Int(*i)),
        Expr::Float(f) => Ok(Value::Float(*f)),
        Expr::Bool(b) => Ok(Value::Bool(*b)),
        Expr::Null => Ok(Value::Null),
        Expr::Var(s) => match slots[*s] {
            Value::Unset => Err(UNSET),
            v => Ok(v),
        },
        // pgbench parses unary minus as 0 - x, so -i64::MIN is an overflow error.
        Expr::Neg(x) => match eval(x, slots, rng)? {
            Value::Int(i) => i.checked_neg().map(Value::Int).ok_or(BIGINT_RANGE),
            Value::Float(f) => Ok(Value::Float(-f)),
            Value::Null => Ok(Value::Null),
            Value::Bool(_) => Err(ScriptError("cannot coerce boolean to int")),
            Value::Unset => Err(UNSET),
        },
        Expr::BitNot(x) => match eval(x, slots, rng)? {
            Value::Null => Ok(Value::Null),
            v => Ok(Value::Int(!to_int(v)?)),
        },
        Expr::Not(x) => match eval(x, slots, rng)? {
            Value::Null => Ok(Value::Null),
            v => Ok(Value::Bool(!to_bool(v)?)),
        },
        // pgbench's IS: same type and, for booleans, same value.
        Expr::Is(x, what) => {
            let v = eval(x, slots, rng)?;
            Ok(Value::Bool(match (v, *what) {
                (Value::Null, Value::Null) => true,
                (Value::Bool(a), Value::Bool(b)) => a == b,
                _ => false,
            }))
        }
        Expr::Op(op, a, b) => {
            let a = eval(a, slots, rng)?;
            let b = eval(b, slots, rng)?;
            arith(*op, a, b)
        }
        // pgbench's evalLazyFunc, which is not SQL's three-valued logic: a NULL on the left
        // gives NULL whatever the right (NULL AND false is NULL), the right side is evaluated
        // only when the left does not decide, and both sides must be booleans (1 AND 2 fails).
        Expr::And(a, b) => match eval(a, slots, rng)? {
            Value::Null => Ok(Value::Null),
            a if !to_bool(a)? => Ok(Value::Bool(false)),
            _ => match eval(b, slots, rng)? {
                Value::Null => Ok(Value::Null),
                b => to_bool(b).map(Value::Bool),
            },
        },
        Expr::Or(a, b) => match eval(a, slots, rng)? {
            Value::Null => Ok(Value::Null),
            a if to_bool(a)? => Ok(Value::Bool(true)),
            _ => match eval(b, slots, rng)? {
                Value::Null => Ok(Value::Null),
                b => to_bool(b).map(Value::Bool),
            },
        },
        Expr::Case(arms, otherwise) => {
            for (when, then) in arms {
                if eval(when, slots, rng)?.truth()? {
                    return eval(then, slots, rng);
                }
            }
            match otherwise {
                Some(e) => eval(e, slots, rng),
                None => Ok(Value::Null),
            }
        }
        Expr::Call(f, args) => call(*f, args, slots, rng),
    }
}

fn call(f: Func, args: &[Expr], slots: &[Value], rng: &mut Prng) -> EvalResult {
    if f == Func::Debug {
        let v = eval(&args[0], slots, rng)?;
        // pgbench's debug() prints to stderr too; it is a tool for writing scripts.
        eprintln!("debug: {v}");
        return Ok(v);
    }
    // Arguments are few; evaluate them in order (random() draws stay in script order).
    let mut vals = [Value::Unset; 3];
    let fixed = !matches!(f, Func::Least | Func::Greatest);
    if fixed {
        for (k, a) in args.iter().enumerate() {
            vals[k] = eval(a, slots, rng)?;
            // As pgbench: any NULL argument makes the result NULL.
            if vals[k] == Value::Null {
                for rest in &args[k + 1..] {
                    eval(rest, slots, rng)?;
                }
                return Ok(Value::Null);
            }
        }
    }
    let int = |k: usize| to_int(vals[k]);
    let float = |k: usize| to_float(vals[k]);
    match f {
        Func::Random => random_uniform(rng, int(0)?, int(1)?).map(Value::Int),
        Func::RandomGaussian | Func::RandomExponential | Func::RandomZipfian => {
            let (lb, ub, p) = (int(0)?, int(1)?, float(2)?);
            match f {
                Func::RandomGaussian => random_gaussian(rng, lb, ub, p),
                Func::RandomExponential => random_exponential(rng, lb, ub, p),
                _ => random_zipfian(rng, lb, ub, p),
            }
            .map(Value::Int)
        }
        Func::Abs => match vals[0] {
            Value::Int(i) => i.checked_abs().map(Value::Int).ok_or(BIGINT_RANGE),
            v => Ok(Value::Float(to_float(v)?.abs())),
        },
        Func::Int => int(0).map(Value::Int),
        Func::Double => float(0).map(Value::Float),
        Func::Sqrt => float(0).map(|x| Value::Float(x.sqrt())),
        Func::Pi => Ok(Value::Float(std::f64::consts::PI)),
        Func::Exp => float(0).map(|x| Value::Float(x.exp())),
        Func::Ln => float(0).map(|x| Value::Float(x.ln())),
        Func::Pow => Ok(Value::Float(float(0)?.powf(float(1)?))),
        Func::Mod => arith(Op::Mod, vals[0], vals[1]),
        Func::Hash | Func::HashMurmur2 => {
            Ok(Value::Int(crate::pgfuncs::hash_murmur2(int(0)?, int(1)?)))
        }
        Func::HashFnv1a => Ok(Value::Int(crate::pgfuncs::hash_fnv1a(int(0)?, int(1)?))),
        Func::Permute => crate::pgfuncs::permute(int(0)?, int(1)?, int(2)?)
            .map(Value::Int)
            .map_err(ScriptError),
        Func::Least | Func::Greatest => {
            // As pgbench: one float argument makes the whole comparison float.
            // Track the integer and the float extreme in one pass so nothing
            // is buffered and random() arguments are drawn once.
            let least = f == Func::Least;
            let (mut bi, mut bf, mut any_float, mut any_null) = (0i64, 0f64, false, false);
            for (k, a) in args.iter().enumerate() {
                let v = eval(a, slots, rng)?;
                if v == Value::Null {
                    any_null = true;
                    continue;
                }
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
            Ok(if any_null {
                Value::Null
            } else if any_float {
                Value::Float(bf)
            } else {
                Value::Int(bi)
            })
        }
        Func::Debug => unreachable!(),
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
    fn a_double_made_an_integer_is_rounded_as_pgbench_rint_does() {
        // The values real pgbench 15 gives (halves go to the even neighbour).
        for (x, want) in [
            (3.7, 4),
            (9.5, 10),
            (-3.5, -4),
            (2.5, 2),
            (-0.4, 0),
            (1.6, 2),
        ] {
            assert_eq!(
                ev(&call(Func::Int, vec![f(x)])),
                Ok(Value::Int(want)),
                "int({x})"
            );
        }
        assert_eq!(ev(&op(Op::Mod, f(7.5), i(2))), Ok(Value::Int(0)));
        assert_eq!(ev(&call(Func::Mod, vec![f(7.9), i(2)])), Ok(Value::Int(0)));
        assert_eq!(
            ev(&call(Func::Random, vec![f(1.6), f(1.6)])),
            Ok(Value::Int(2))
        );
        assert!(ev(&call(Func::Int, vec![f(f64::NAN)])).is_err());
        assert!(ev(&call(Func::Int, vec![f(9.3e18)])).is_err());
    }

    #[test]
    fn float_arithmetic() {
        assert_eq!(ev(&op(Op::Add, i(2), f(0.5))), Ok(Value::Float(2.5)));
        assert_eq!(ev(&op(Op::Div, i(7), f(2.0))), Ok(Value::Float(3.5)));
        assert_eq!(ev(&op(Op::Mul, Expr::Var(1), i(2))), Ok(Value::Float(5.0)));
        assert_eq!(ev(&op(Op::Mod, f(7.9), i(3))), Ok(Value::Int(2))); // rint(7.9) % 3
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
        assert_eq!(ev(&call(Func::Int, vec![f(-2.9)])), Ok(Value::Int(-3)));
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

    fn b(v: bool) -> Expr {
        Expr::Bool(v)
    }
    fn and(x: Expr, y: Expr) -> Expr {
        Expr::And(Box::new(x), Box::new(y))
    }
    fn or(x: Expr, y: Expr) -> Expr {
        Expr::Or(Box::new(x), Box::new(y))
    }

    #[test]
    fn comparisons_and_bits() {
        assert_eq!(ev(&op(Op::Eq, i(2), f(2.0))), Ok(Value::Bool(true)));
        assert_eq!(ev(&op(Op::Ne, i(2), i(3))), Ok(Value::Bool(true)));
        assert_eq!(ev(&op(Op::Lt, Expr::Var(0), i(8))), Ok(Value::Bool(true)));
        assert_eq!(ev(&op(Op::Ge, f(2.5), Expr::Var(1))), Ok(Value::Bool(true)));
        assert_eq!(ev(&op(Op::Gt, i(2), i(2))), Ok(Value::Bool(false)));
        assert_eq!(ev(&op(Op::Le, i(2), i(2))), Ok(Value::Bool(true)));
        // Any NULL operand gives NULL, as in pgbench.
        assert_eq!(ev(&op(Op::Eq, Expr::Null, i(1))), Ok(Value::Null));
        assert_eq!(ev(&op(Op::Add, i(1), Expr::Null)), Ok(Value::Null));
        assert!(ev(&op(Op::Lt, b(true), i(1))).is_err());
        assert_eq!(ev(&op(Op::BitAnd, i(12), i(10))), Ok(Value::Int(8)));
        assert_eq!(ev(&op(Op::BitOr, i(12), i(10))), Ok(Value::Int(14)));
        assert_eq!(ev(&op(Op::BitXor, i(12), i(10))), Ok(Value::Int(6)));
        assert_eq!(ev(&op(Op::Shl, i(1), i(10))), Ok(Value::Int(1024)));
        assert_eq!(ev(&op(Op::Shr, i(-8), i(1))), Ok(Value::Int(-4)));
        assert_eq!(ev(&Expr::BitNot(Box::new(i(0)))), Ok(Value::Int(-1)));
    }

    #[test]
    fn logic_and_case_as_pgbench() {
        let null = || Expr::Null;
        assert_eq!(ev(&and(b(true), b(false))), Ok(Value::Bool(false)));
        // What real pgbench 15 gives (debug()): a NULL on the left decides, unlike SQL.
        assert_eq!(ev(&and(null(), b(false))), Ok(Value::Null));
        assert_eq!(ev(&and(b(false), null())), Ok(Value::Bool(false)));
        assert_eq!(ev(&and(null(), b(true))), Ok(Value::Null));
        assert_eq!(ev(&and(b(true), null())), Ok(Value::Null));
        assert_eq!(ev(&or(null(), b(true))), Ok(Value::Null));
        assert_eq!(ev(&or(b(true), null())), Ok(Value::Bool(true)));
        assert_eq!(ev(&or(null(), b(false))), Ok(Value::Null));
        assert_eq!(ev(&or(b(false), null())), Ok(Value::Null));
        assert_eq!(ev(&and(null(), i(1))), Ok(Value::Null));
        // Numbers are not booleans to AND and OR (they are to \if and CASE: valueTruth).
        let int_error = Err(ScriptError("cannot coerce int to boolean"));
        assert_eq!(ev(&and(i(1), i(2))), int_error);
        assert_eq!(ev(&or(i(0), i(1))), int_error);
        assert_eq!(ev(&and(b(true), i(1))), int_error);
        assert_eq!(ev(&or(i(1), b(true))), int_error);
        assert_eq!(ev(&and(b(false), i(1))), Ok(Value::Bool(false)));
        assert_eq!(ev(&or(b(true), i(1))), Ok(Value::Bool(true)));
        assert_eq!(
            ev(&and(f(1.5), b(true))),
            Err(ScriptError("cannot coerce double to boolean"))
        );
        // The right side is not evaluated once the left decides: no division error.
        let boom = op(Op::Div, i(1), i(0));
        assert_eq!(ev(&and(b(false), boom.clone())), Ok(Value::Bool(false)));
        assert_eq!(ev(&or(b(true), boom)), Ok(Value::Bool(true)));
        assert_eq!(ev(&Expr::Not(Box::new(b(true)))), Ok(Value::Bool(false)));
        assert_eq!(ev(&Expr::Not(Box::new(null()))), Ok(Value::Null));
        assert!(ev(&Expr::Not(Box::new(i(1)))).is_err());
        let is = |x: Expr, v: Value| Expr::Is(Box::new(x), v);
        assert_eq!(ev(&is(null(), Value::Null)), Ok(Value::Bool(true)));
        assert_eq!(ev(&is(i(0), Value::Null)), Ok(Value::Bool(false)));
        assert_eq!(ev(&is(b(true), Value::Bool(true))), Ok(Value::Bool(true)));
        assert_eq!(ev(&is(i(1), Value::Bool(true))), Ok(Value::Bool(false)));
        let case = |otherwise: Option<Expr>| {
            Expr::Case(
                vec![
                    (op(Op::Gt, Expr::Var(0), i(10)), i(1)),
                    (op(Op::Gt, Expr::Var(0), i(5)), i(2)),
                ],
                otherwise.map(Box::new),
            )
        };
        assert_eq!(ev(&case(None)), Ok(Value::Int(2)));
        let never = Expr::Case(vec![(b(false), i(1))], None);
        assert_eq!(ev(&never), Ok(Value::Null));
        let other = Expr::Case(vec![(null(), i(1))], Some(Box::new(i(9))));
        assert_eq!(ev(&other), Ok(Value::Int(9)));
    }

    #[test]
    fn more_functions() {
        assert_eq!(
            ev(&call(Func::Pi, vec![])),
            Ok(Value::Float(std::f64::consts::PI))
        );
        assert_eq!(ev(&call(Func::Exp, vec![i(0)])), Ok(Value::Float(1.0)));
        assert_eq!(ev(&call(Func::Ln, vec![i(1)])), Ok(Value::Float(0.0)));
        assert_eq!(
            ev(&call(Func::Pow, vec![i(2), i(10)])),
            Ok(Value::Float(1024.0))
        );
        assert_eq!(Func::parse("power"), Some(Func::Pow));
        assert_eq!(ev(&call(Func::Mod, vec![i(-7), i(3)])), Ok(Value::Int(-1)));
        assert_eq!(ev(&call(Func::Abs, vec![Expr::Null])), Ok(Value::Null));
        assert_eq!(
            ev(&call(Func::HashFnv1a, vec![i(42), i(5432)])),
            Ok(Value::Int(crate::pgfuncs::hash_fnv1a(42, 5432)))
        );
        assert_eq!(
            ev(&call(Func::Hash, vec![i(42), i(5432)])),
            Ok(Value::Int(crate::pgfuncs::hash_murmur2(42, 5432)))
        );
        assert!(ev(&call(Func::Permute, vec![i(1), i(0), i(1)])).is_err());
        assert_eq!(ev(&call(Func::Debug, vec![i(3)])), Ok(Value::Int(3)));
        assert_eq!(Value::Float(0.1).to_string(), "0.1");
        assert_eq!(Value::Bool(true).to_string(), "true");
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
