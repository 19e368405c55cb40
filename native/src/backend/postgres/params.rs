//! Parameters: the kind of each, chosen once per statement from the server's
//! inferred types, script values converted to it, and their binary encoding.

use std::error::Error as StdError;
use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{IsNull, ToSql, Type};

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
}

pub(super) fn convert(k: Kind, v: Value) -> Result<Param, String> {
    fn int(v: Value) -> Result<i64, String> {
        match v {
            Value::Int(i) => Ok(i),
            // Exactly integral floats (e.g. from double()) are accepted.
            Value::Float(f) if f.fract() == 0.0 && (-9.2e18..=9.2e18).contains(&f) => Ok(f as i64),
            Value::Float(f) => Err(format!("{f} is not an integer")),
            Value::Unset => Err("unset value".into()),
        }
    }
    fn float(v: Value) -> f64 {
        match v {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            Value::Unset => f64::NAN,
        }
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
        Kind::Float4 => Param::F32(float(v) as f32),
        Kind::Float8 => Param::F64(float(v)),
        Kind::Numeric => Param::Numeric(v),
        Kind::Text => Param::Text(v),
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
            Param::Text(Value::Int(i)) => write!(out, "{i}")?,
            Param::Text(Value::Float(f)) => write!(out, "{f}")?,
            Param::Numeric(v) => encode_numeric(v, out),
            Param::Text(Value::Unset) => return Ok(IsNull::Yes),
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
            Value::Unset => return header(out, 0, 0, NUMERIC_NAN, 0),
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
