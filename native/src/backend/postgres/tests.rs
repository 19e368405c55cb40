//! Unit tests of the PostgreSQL backend: parameter encoding and the message scan.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use bytes::BytesMut;

use super::params::{convert, encode_numeric, Kind, Param, NUMERIC_NAN};
use super::scan::MsgScan;
use crate::script::Value;

fn numeric(v: Value) -> Vec<i16> {
    let mut b = BytesMut::new();
    encode_numeric(v, &mut b);
    b.chunks(2)
        .map(|c| i16::from_be_bytes([c[0], c[1]]))
        .collect()
}

#[test]
fn numeric_encoding() {
    // [ndigits, weight, sign, dscale, digits...]
    assert_eq!(numeric(Value::Int(0)), vec![0, 0, 0, 0]);
    assert_eq!(numeric(Value::Int(12345)), vec![2, 1, 0, 0, 1, 2345]);
    assert_eq!(numeric(Value::Int(10000)), vec![1, 1, 0, 0, 1]);
    assert_eq!(numeric(Value::Int(-7)), vec![1, 0, 0x4000, 0, 7]);
    assert_eq!(numeric(Value::Float(1.5)), vec![2, 0, 0, 1, 1, 5000]);
    assert_eq!(numeric(Value::Float(0.001)), vec![1, -1, 0, 3, 10]);
    assert_eq!(
        numeric(Value::Float(-123.25)),
        vec![2, 0, 0x4000, 2, 123, 2500]
    );
    assert_eq!(numeric(Value::Float(2.0)), vec![1, 0, 0, 0, 2]);
    let nan = numeric(Value::Float(f64::NAN));
    assert_eq!(nan[2] as u16, NUMERIC_NAN);
    assert_eq!(numeric(Value::Int(i64::MIN))[0], 5);
    assert!(numeric(Value::Float(1e300)).len() > 4);
    assert!(numeric(Value::Float(5e-324)).len() > 4);
}

#[test]
fn commit_counting() {
    let z = |st: u8| vec![b'Z', 0, 0, 0, 5, st];
    let tag = |t: &str| {
        let mut m = vec![b'C'];
        m.extend_from_slice(&((t.len() + 5) as u32).to_be_bytes());
        m.extend_from_slice(t.as_bytes());
        m.push(0);
        m
    };
    let err = vec![b'E', 0, 0, 0, 6, b'S', 0];
    let mut msgs = Vec::new();
    msgs.extend(z(b'I')); // startup: 1
    msgs.extend(tag("UPDATE 1"));
    msgs.extend(z(b'I')); // autocommit: 2
    msgs.extend(tag("BEGIN"));
    msgs.extend(z(b'T'));
    msgs.extend(tag("COMMIT"));
    msgs.extend(z(b'I')); // 3
    msgs.extend(err.clone());
    msgs.extend(z(b'I')); // failed autocommit statement: no
    msgs.extend(tag("BEGIN"));
    msgs.extend(z(b'T'));
    msgs.extend(tag("ROLLBACK"));
    msgs.extend(z(b'I')); // rollback: no
    msgs.extend(tag("SELECT 1"));
    msgs.extend(z(b'I')); // 4
    for step in [msgs.len(), 1, 2, 7] {
        let status = AtomicU8::new(b'I');
        let mut scan = MsgScan::default();
        for chunk in msgs.chunks(step) {
            scan.feed(chunk, &status);
        }
        assert_eq!(scan.commits, 4, "step {step}");
    }
}

#[test]
fn ready_for_query_scan() {
    // DataRow with a 'Z' inside its body, then CommandComplete, then
    // ReadyForQuery 'T'; fed whole and one byte at a time.
    let mut msgs = Vec::new();
    msgs.extend_from_slice(&[b'D', 0, 0, 0, 10, b'Z', 0, 0, 0, 5, b'E']);
    msgs.extend_from_slice(&[b'C', 0, 0, 0, 8, b'B', b'E', b'G', 0]);
    msgs.extend_from_slice(&[b'Z', 0, 0, 0, 5, b'T']);
    for step in [msgs.len(), 1, 3] {
        let status = AtomicU8::new(b'I');
        let mut scan = MsgScan::default();
        for chunk in msgs.chunks(step) {
            scan.feed(chunk, &status);
        }
        assert_eq!(status.load(Relaxed), b'T', "step {step}");
        scan.feed(&[b'Z', 0, 0, 0, 5, b'I'], &status);
        assert_eq!(status.load(Relaxed), b'I');
    }
}

#[test]
fn conversions() {
    assert!(matches!(
        convert(Kind::Int4, Value::Int(5)),
        Ok(Param::I32(5))
    ));
    assert!(convert(Kind::Int4, Value::Int(1 << 40)).is_err());
    assert!(convert(Kind::Int2, Value::Int(40000)).is_err());
    assert!(matches!(
        convert(Kind::Int8, Value::Float(3.0)),
        Ok(Param::I64(3))
    ));
    assert!(convert(Kind::Int8, Value::Float(3.5)).is_err());
    assert!(matches!(convert(Kind::Float8, Value::Int(3)), Ok(Param::F64(x)) if x == 3.0));
    assert!(convert(Kind::Oid, Value::Int(-1)).is_err());
}
