//! Parameters: the kind of each, chosen once per statement from the server's
//! inferred types, script values converted to it, and their binary encoding.

use std::error::Error as StdError;
use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};

use crate::script::Value;

/// How a parameter is sent, decided once per statement from the server's
/// inferred parameter types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Text,
    Oid,
    Bool,
}

impl Kind {
    pub(super) fn of(ty: &Type) -> Option<Kind> {
        Some(match *ty {
            Type::INT2 => Kind::Int2,
            Type::INT4 => Kind::Int4,
            Type::INT8 => Kind::Int8,
            Type::FLOAT4 => Kind::Float4,
            Type::FLOAT8 => Kind::Float8,
            Type::NUMERIC => Kind::Numeric,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => Kind::Text,
            Type::OID => Kind::Oid,
            Type::BOOL => Kind::Bool,
            _ => return None,
        })
    }
}

/// A script value already converted to its parameter's type, so encoding
/// cannot fail and conversion errors are reported as script errors.
#[derive(Clone, Copy, Debug)]
pub(super) enum Param {
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Numeric(Value),
    Text(Value),
    Oid(u32),
    Bool(bool),
    /// A NULL script value, whatever the parameter's type.
    Null,
}

pub(super) fn convert(k: Kind, v: Value) -> Result<Param, String> {
    fn int(v: Value) -> Result<i64, String> {
        match v {
            Value::Int(i) => Ok(i),
            // Exactly integral floats (e.g. from double()) are accepted.
            Value::Float(f) if f.fract() == 0.0 && (-9.2e18..=9.2e18).contains(&f) => Ok(f as i64),
            Value::Float(f) => Err(format!("{f} is not an integer")),
            Value::Bool(_) => Err("a boolean is not an integer".into()),
            Value::Null | Value::Unset => Err("unset value".into()),
        }
    }
    fn float(v: Value) -> Result<f64, String> {
        match v {
            Value::Int(i) => Ok(i as f64),
            Value::Float(f) => Ok(f),
            Value::Bool(_) => Err("a boolean is not a number".into()),
            Value::Null | Value::Unset => Ok(f64::NAN),
        }
    }
    if v == Value::Null {
        return Ok(Param::Null);
    }
    let range = |i: i64, t: &str| format!("{i} is out of range for type {t}");
    Ok(match k {
        Kind::Int2 => {
            let i = int(v)?;
            Param::I16(i16::try_from(i).map_err(|_| range(i, "smallint"))?)
        }
        Kind::Int4 => {
            let i = int(v)?;
            Param::I32(i32::try_from(i).map_err(|_| range(i, "integer"))?)
        }
        Kind::Int8 => Param::I64(int(v)?),
        Kind::Oid => {
            let i = int(v)?;
            Param::Oid(u32::try_from(i).map_err(|_| range(i, "oid"))?)
        }
        Kind::Float4 => Param::F32(float(v)? as f32),
        Kind::Float8 => Param::F64(float(v)?),
        Kind::Numeric => {
            float(v)?;
            Param::Numeric(v)
        }
        Kind::Text => Param::Text(v),
        // pgbench sends the text of the value, which the server reads as a boolean.
        Kind::Bool => Param::Bool(match v {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            _ => return Err(format!("{v} is not a boolean")),
        }),
    })
}

impl ToSql for Param {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match *self {
            Param::I16(x) => out.put_i16(x),
            Param::I32(x) => out.put_i32(x),
            Param::I64(x) => out.put_i64(x),
            Param::F32(x) => out.put_f32(x),
            Param::F64(x) => out.put_f64(x),
            Param::Oid(x) => out.put_u32(x),
            // Binary format of text types is the bare UTF-8 bytes.
            Param::Bool(b) => out.put_u8(b as u8),
            Param::Text(Value::Int(i)) => write!(out, "{i}")?,
            Param::Text(Value::Float(f)) => write!(out, "{f}")?,
            Param::Text(v @ Value::Bool(_)) => write!(out, "{v}")?,
            Param::Numeric(v) => encode_numeric(v, out),
            Param::Text(Value::Unset | Value::Null) | Param::Null => return Ok(IsNull::Yes),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        // The kind was chosen from this very type at prepare time.
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
pub(super) const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;

/// NUMERIC binary format: ndigits, weight, sign, dscale, then base-10000 digits.
/// Goes through the shortest round-trip decimal text of the value, so a float
/// binds as the number it prints as (0.1 -> 0.1, not 0.1000000000000000055...).
pub(super) fn encode_numeric(v: Value, out: &mut BytesMut) {
    let header = |out: &mut BytesMut, nd: i16, w: i16, sign: u16, dscale: u16| {
        out.put_i16(nd);
        out.put_i16(w);
        out.put_u16(sign);
        out.put_u16(dscale);
    };
    // Rust never uses exponent notation for Display of f64, and i64 fits easily.
    let mut buf = [0u8; 400];
    let len = {
        let mut cur = std::io::Cursor::new(&mut buf[..]);
        let r = match v {
            Value::Int(i) => std::io::Write::write_fmt(&mut cur, format_args!("{i}")),
            Value::Float(f) if f.is_nan() => return header(out, 0, 0, NUMERIC_NAN, 0),
            Value::Float(f) if f.is_infinite() => {
                return header(
                    out,
                    0,
                    0,
                    if f > 0.0 { NUMERIC_PINF } else { NUMERIC_NINF },
                    0,
                )
            }
            Value::Float(f) => std::io::Write::write_fmt(&mut cur, format_args!("{f}")),
            // `convert` lets only numbers through to NUMERIC.
            Value::Bool(_) | Value::Null | Value::Unset => {
                return header(out, 0, 0, NUMERIC_NAN, 0)
            }
        };
        debug_assert!(r.is_ok());
        cur.position() as usize
    };
    let text = &buf[..len];
    let (neg, text) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let dot = text.iter().position(|&c| c == b'.').unwrap_or(text.len());
    let (int_part, frac_part) = (
        &text[..dot],
        if dot < text.len() {
            &text[dot + 1..]
        } else {
            &[][..]
        },
    );
    let dscale = frac_part.len() as u16;

    // Group decimal digits by 4 around the decimal point.
    let mut digits = [0i16; 100];
    let mut nd = 0usize;
    let int_groups = int_part.len().div_ceil(4);
    let lead = int_groups * 4 - int_part.len();
    let digit_at = |i: usize| -> i16 {
        // Position i in the zero-padded sequence [lead zeros][int][frac][pad zeros].
        if i < lead {
            return 0;
        }
        let i = i - lead;
        if i < int_part.len() {
            return (int_part[i] - b'0') as i16;
        }
        let i = i - int_part.len();
        if i < frac_part.len() {
            (frac_part[i] - b'0') as i16
        } else {
            0
        }
    };
    let total_groups = int_groups + frac_part.len().div_ceil(4);
    for g in 0..total_groups {
        let d = (0..4).fold(0i16, |acc, j| acc * 10 + digit_at(g * 4 + j));
        digits[nd] = d;
        nd += 1;
    }
    let mut weight = int_groups as i32 - 1;
    let mut first = 0;
    while first < nd && digits[first] == 0 {
        first += 1;
        weight -= 1;
    }
    while nd > first && digits[nd - 1] == 0 {
        nd -= 1;
    }
    if first == nd {
        return header(out, 0, 0, NUMERIC_POS, dscale);
    }
    header(
        out,
        (nd - first) as i16,
        weight as i16,
        if neg { NUMERIC_NEG } else { NUMERIC_POS },
        dscale,
    );
    for d in &digits[first..nd] {
        out.put_i16(*d);
    }
}

/// A result column read into a script value (`\\gset`, `\\aset`): integers,
/// floats, NUMERIC, booleans, and text that reads as one of them; NULL is NULL.
pub(super) struct Num(pub(super) Value);

type BoxError = Box<dyn StdError + Sync + Send>;

impl<'a> FromSql<'a> for Num {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Num, BoxError> {
        Ok(Num(match *ty {
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::OID => Value::Int(u32::from_sql(ty, raw)?.into()),
            Type::FLOAT4 => Value::Float(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Float(f64::from_sql(ty, raw)?),
            Type::BOOL => Value::Bool(bool::from_sql(ty, raw)?),
            Type::NUMERIC => decode_numeric(raw)?,
            _ => {
                let text = <&str as FromSql>::from_sql(ty, raw)?;
                crate::backend::value_from_text(Some(text)).map_err(|e| e.message)?
            }
        }))
    }

    fn from_sql_null(_ty: &Type) -> Result<Num, BoxError> {
        Ok(Num(Value::Null))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2
                | Type::INT4
                | Type::INT8
                | Type::OID
                | Type::FLOAT4
                | Type::FLOAT8
                | Type::BOOL
                | Type::NUMERIC
                | Type::TEXT
                | Type::VARCHAR
                | Type::BPCHAR
                | Type::NAME
        )
    }
}

/// NUMERIC's binary form: an integer when it has no fractional digits and
/// fits, else the nearest double (through its decimal text, for exactness).
pub(super) fn decode_numeric(raw: &[u8]) -> Result<Value, BoxError> {
    let word = |i: usize| -> Result<u16, BoxError> {
        raw.get(2 * i..2 * i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "truncated numeric".into())
    };
    let nd = word(0)? as usize;
    let weight = word(1)? as i16 as i32;
    let sign = word(2)?;
    let dscale = word(3)?;
    match sign {
        NUMERIC_NAN => return Ok(Value::Float(f64::NAN)),
        NUMERIC_PINF => return Ok(Value::Float(f64::INFINITY)),
        NUMERIC_NINF => return Ok(Value::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let mut text = String::with_capacity(8 + 4 * nd.max(1));
    if sign == NUMERIC_NEG {
        text.push('-');
    }
    let mut digits = Vec::with_capacity(nd);
    for i in 0..nd {
        digits.push(word(4 + i)?);
    }
    // Digit i is worth digits[i] * 10000^(weight - i); missing ones are zero.
    let at = |i: i32| {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0)
    };
    if weight < 0 {
        text.push('0');
    }
    for k in (0..=weight).rev() {
        if k == weight {
            write!(text, "{}", at(weight - k))?;
        } else {
            write!(text, "{:04}", at(weight - k))?;
        }
    }
    let frac_groups = nd as i32 - 1 - weight;
    for j in 1..=frac_groups {
        if j == 1 {
            text.push('.');
        }
        write!(text, "{:04}", at(weight + j))?;
    }
    if dscale == 0 && frac_groups <= 0 {
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Value::Int(i));
        }
    }
    Ok(Value::Float(text.parse::<f64>()?))
}
