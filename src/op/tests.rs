//! Kernel tests: every predefined operation on each class of datatype, MINLOC/MAXLOC ties,
//! invalid pairs, and user operations on padded types.

use super::*;

fn bytes<T: Copy, const N: usize>(v: [T; N], to: impl Fn(T) -> Vec<u8>) -> Vec<u8> {
    v.into_iter().flat_map(to).collect()
}

fn run(op: MPI_Op, dt: MPI_Datatype, input: &[u8], inout: &[u8]) -> Vec<u8> {
    let red = Reduction::new(&Op::from_handle(op).unwrap(), dt).unwrap();
    let mut out = inout.to_vec();
    red.apply(input, &mut out);
    out
}

fn ints(op: MPI_Op, dt: MPI_Datatype, a: [i32; 4], b: [i32; 4]) -> [i32; 4] {
    let r = run(op, dt, &bytes(a, |x| x.to_ne_bytes().to_vec()), &bytes(b, |x| x.to_ne_bytes().to_vec()));
    std::array::from_fn(|i| i32::from_ne_bytes(r[i * 4..i * 4 + 4].try_into().unwrap()))
}

#[test]
fn integer_ops() {
    let (a, b) = ([3, 0, -5, 12], [7, 2, -9, 10]);
    for dt in [MPI_INT, MPI_INTEGER, MPI_INT32_T, MPI_WCHAR] {
        assert_eq!(ints(MPI_MAX, dt, a, b), [7, 2, -5, 12]);
        assert_eq!(ints(MPI_MIN, dt, a, b), [3, 0, -9, 10]);
        assert_eq!(ints(MPI_SUM, dt, a, b), [10, 2, -14, 22]);
        assert_eq!(ints(MPI_PROD, dt, a, b), [21, 0, 45, 120]);
        assert_eq!(ints(MPI_LAND, dt, a, b), [1, 0, 1, 1]);
        assert_eq!(ints(MPI_LOR, dt, [0, 0, 1, 4], [0, 3, 0, 0]), [0, 1, 1, 1]);
        assert_eq!(ints(MPI_LXOR, dt, [0, 0, 1, 4], [0, 3, 0, 5]), [0, 1, 1, 0]);
        assert_eq!(ints(MPI_BAND, dt, [12, 5, -1, 0], [10, 3, 6, 9]), [8, 1, 6, 0]);
        assert_eq!(ints(MPI_BOR, dt, [12, 5, -1, 0], [10, 3, 6, 9]), [14, 7, -1, 9]);
        assert_eq!(ints(MPI_BXOR, dt, [12, 5, -1, 0], [10, 3, 6, 9]), [6, 6, !6, 9]);
        assert_eq!(ints(MPI_REPLACE, dt, a, b), a);
        assert_eq!(ints(MPI_NO_OP, dt, a, b), b);
    }
    // Unsigned and narrow types: wrap-around and unsigned order.
    assert_eq!(run(MPI_SUM, MPI_UNSIGNED_CHAR, &[200, 1], &[100, 2]), vec![44, 3]);
    assert_eq!(run(MPI_MAX, MPI_UNSIGNED_CHAR, &[200, 1], &[100, 2]), vec![200, 2]);
    assert_eq!(run(MPI_MAX, MPI_SIGNED_CHAR, &[200, 1], &[100, 2]), vec![100, 2]);
    let s = |v: [i16; 2]| bytes(v, |x| x.to_ne_bytes().to_vec());
    assert_eq!(run(MPI_PROD, MPI_SHORT, &s([300, -2]), &s([300, 7])), s([300i16.wrapping_mul(300), -14]));
    let u = |v: [u64; 2]| bytes(v, |x| x.to_ne_bytes().to_vec());
    assert_eq!(run(MPI_MIN, MPI_UNSIGNED_LONG, &u([u64::MAX, 1]), &u([5, 2])), u([5, 1]));
    let l = |v: [i64; 2]| bytes(v, |x| x.to_ne_bytes().to_vec());
    assert_eq!(run(MPI_SUM, MPI_LONG_LONG, &l([1 << 40, -3]), &l([1, 3])), l([(1 << 40) + 1, 0]));
    assert_eq!(run(MPI_BXOR, MPI_BYTE, &[0xf0, 0x0f], &[0xff, 0x0f]), vec![0x0f, 0]);
}

#[test]
fn float_and_complex_ops() {
    let f = |v: [f64; 3]| bytes(v, |x| x.to_ne_bytes().to_vec());
    for dt in [MPI_DOUBLE, MPI_DOUBLE_PRECISION, MPI_REAL8] {
        assert_eq!(run(MPI_SUM, dt, &f([1.5, -2.0, 0.25]), &f([2.0, 2.0, 0.5])), f([3.5, 0.0, 0.75]));
        assert_eq!(run(MPI_PROD, dt, &f([1.5, -2.0, 0.25]), &f([2.0, 2.0, 0.5])), f([3.0, -4.0, 0.125]));
        assert_eq!(run(MPI_MAX, dt, &f([1.5, -2.0, 0.25]), &f([2.0, 2.0, 0.5])), f([2.0, 2.0, 0.5]));
        assert_eq!(run(MPI_MIN, dt, &f([1.5, -2.0, 0.25]), &f([2.0, 2.0, 0.5])), f([1.5, -2.0, 0.25]));
    }
    let g = |v: [f32; 2]| bytes(v, |x| x.to_ne_bytes().to_vec());
    assert_eq!(run(MPI_SUM, MPI_FLOAT, &g([1.0, 2.0]), &g([0.5, 0.5])), g([1.5, 2.5]));
    // (1 + 2i)(3 - i) = 5 + 5i
    assert_eq!(run(MPI_PROD, MPI_C_FLOAT_COMPLEX, &g([1.0, 2.0]), &g([3.0, -1.0])), g([5.0, 5.0]));
    assert_eq!(run(MPI_SUM, MPI_COMPLEX, &g([1.0, 2.0]), &g([3.0, -1.0])), g([4.0, 1.0]));
    let c = |v: [f64; 2]| bytes(v, |x| x.to_ne_bytes().to_vec());
    assert_eq!(run(MPI_PROD, MPI_DOUBLE_COMPLEX, &c([1.0, 2.0]), &c([3.0, -1.0])), c([5.0, 5.0]));
}

#[test]
fn logical_ops() {
    assert_eq!(run(MPI_LAND, MPI_C_BOOL, &[1, 1, 0, 0], &[1, 0, 1, 0]), vec![1, 0, 0, 0]);
    assert_eq!(run(MPI_LOR, MPI_C_BOOL, &[1, 1, 0, 0], &[1, 0, 1, 0]), vec![1, 1, 1, 0]);
    assert_eq!(run(MPI_LXOR, MPI_C_BOOL, &[1, 1, 0, 0], &[1, 0, 1, 0]), vec![0, 1, 1, 0]);
    assert_eq!(ints(MPI_LAND, MPI_LOGICAL, [1, 1, 0, 0], [1, 0, 1, 0]), [1, 0, 0, 0]);
    assert_eq!(ints(MPI_LXOR, MPI_LOGICAL, [1, 1, 0, 0], [1, 0, 1, 0]), [0, 1, 1, 0]);
}

fn pair_f64_i32(v: &[(f64, i32)]) -> Vec<u8> {
    v.iter().flat_map(|(x, i)| [x.to_ne_bytes().to_vec(), i.to_ne_bytes().to_vec()].concat()).collect()
}

#[test]
fn minloc_maxloc_and_ties() {
    let a = pair_f64_i32(&[(1.0, 3), (5.0, 1), (2.0, 7), (2.0, 2)]);
    let b = pair_f64_i32(&[(2.0, 0), (5.0, 0), (2.0, 4), (1.0, 9)]);
    assert_eq!(run(MPI_MINLOC, MPI_DOUBLE_INT, &a, &b), pair_f64_i32(&[(1.0, 3), (5.0, 0), (2.0, 4), (1.0, 9)]));
    assert_eq!(run(MPI_MAXLOC, MPI_DOUBLE_INT, &a, &b), pair_f64_i32(&[(2.0, 0), (5.0, 0), (2.0, 4), (2.0, 2)]));
    let p = |v: [(i32, i32); 2]| bytes(v, |(x, i)| [x.to_ne_bytes(), i.to_ne_bytes()].concat());
    for dt in [MPI_2INT, MPI_2INTEGER] {
        assert_eq!(run(MPI_MINLOC, dt, &p([(4, 8), (4, 1)]), &p([(4, 3), (4, 2)])), p([(4, 3), (4, 1)]));
        assert_eq!(run(MPI_MAXLOC, dt, &p([(9, 8), (-1, 1)]), &p([(4, 3), (0, 2)])), p([(9, 8), (0, 2)]));
    }
    let s = |v: [(i16, i32); 2]| bytes(v, |(x, i)| [x.to_ne_bytes().to_vec(), i.to_ne_bytes().to_vec()].concat());
    assert_eq!(run(MPI_MAXLOC, MPI_SHORT_INT, &s([(3, 5), (-2, 0)]), &s([(3, 4), (1, 1)])), s([(3, 4), (1, 1)]));
    let r = |v: [(f32, f32); 1]| bytes(v, |(x, i)| [x.to_ne_bytes(), i.to_ne_bytes()].concat());
    assert_eq!(run(MPI_MINLOC, MPI_2REAL, &r([(1.0, 2.0)]), &r([(1.0, 1.0)])), r([(1.0, 1.0)]));
    let fi = |v: [(f32, i32); 1]| bytes(v, |(x, i)| [x.to_ne_bytes(), i.to_ne_bytes()].concat());
    assert_eq!(run(MPI_MINLOC, MPI_FLOAT_INT, &fi([(-1.0, 6)]), &fi([(1.0, 1)])), fi([(-1.0, 6)]));
    let li = |v: [(i64, i32); 1]| bytes(v, |(x, i)| [x.to_ne_bytes().to_vec(), i.to_ne_bytes().to_vec()].concat());
    assert_eq!(run(MPI_MAXLOC, MPI_LONG_INT, &li([(1 << 40, 6)]), &li([(1, 1)])), li([(1 << 40, 6)]));
    let d = |v: [(f64, f64); 1]| bytes(v, |(x, i)| [x.to_ne_bytes(), i.to_ne_bytes()].concat());
    assert_eq!(run(MPI_MAXLOC, MPI_2DOUBLE_PRECISION, &d([(3.0, 4.0)]), &d([(3.0, 2.0)])), d([(3.0, 2.0)]));
}

/// x87 extended encodings of small integers: significand with the explicit integer bit.
fn f80(v: i64) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    if v != 0 {
        let m = v.unsigned_abs();
        let shift = m.leading_zeros();
        b[..8].copy_from_slice(&(m << shift).to_le_bytes());
        let exp = 16383 + 63 - shift as u16;
        b[8..10].copy_from_slice(&(exp | if v < 0 { 0x8000 } else { 0 }).to_le_bytes());
    }
    b
}

#[test]
fn long_double_compare_is_exact() {
    let vals = [-300i64, -2, -1, 0, 1, 2, 3, 1 << 40];
    for &x in &vals {
        for &y in &vals {
            let r = run(MPI_MAX, MPI_LONG_DOUBLE, &f80(x), &f80(y));
            assert_eq!(r, f80(x.max(y)), "max({x}, {y})");
            let r = run(MPI_MIN, MPI_LONG_DOUBLE, &f80(x), &f80(y));
            assert_eq!(r, f80(x.min(y)), "min({x}, {y})");
        }
    }
    let pair = |v: i64, i: i32| [f80(v), i.to_ne_bytes().to_vec()].concat();
    assert_eq!(run(MPI_MINLOC, MPI_LONG_DOUBLE_INT, &pair(2, 5), &pair(2, 3)), pair(2, 3));
}

#[test]
fn long_double_arithmetic_and_logic() {
    let vals = [-300i64, -2, -1, 0, 1, 3, 1 << 30];
    for &x in &vals {
        for &y in &vals {
            assert_eq!(run(MPI_SUM, MPI_LONG_DOUBLE, &f80(x), &f80(y)), f80(x + y), "{x} + {y}");
            let mut prod = f80(x * y);
            if x * y == 0 && (x < 0) != (y < 0) {
                prod[9] |= 0x80; // IEEE: a zero product of opposite signs is -0
            }
            assert_eq!(run(MPI_PROD, MPI_LONG_DOUBLE, &f80(x), &f80(y)), prod, "{x} * {y}");
            let t = |v: bool| f80(v as i64);
            assert_eq!(run(MPI_LXOR, MPI_LONG_DOUBLE, &f80(x), &f80(y)), t((x != 0) != (y != 0)));
            assert_eq!(run(MPI_LAND, MPI_LONG_DOUBLE, &f80(x), &f80(y)), t(x != 0 && y != 0));
        }
    }
    // 2^64 + 1 needs the 64-bit significand: exact in long double, not in double.
    assert_eq!(run(MPI_SUM, MPI_LONG_DOUBLE, &f80(1 << 62), &f80(1)), f80((1 << 62) + 1));
    // (1 + 2i)(3 + 4i) = -5 + 10i: the real part's subtraction runs the right way round.
    let c = |re: i64, im: i64| [f80(re), f80(im)].concat();
    assert_eq!(run(MPI_PROD, MPI_C_LONG_DOUBLE_COMPLEX, &c(1, 2), &c(3, 4)), c(-5, 10));
    assert_eq!(run(MPI_PROD, MPI_C_LONG_DOUBLE_COMPLEX, &c(3, 4), &c(1, 2)), c(-5, 10));
    assert_eq!(run(MPI_SUM, MPI_C_LONG_DOUBLE_COMPLEX, &c(1, -2), &c(3, 4)), c(4, 2));
}

#[test]
fn invalid_pairs_are_err_op() {
    for (op, dt) in [
        (MPI_SUM, MPI_BYTE),
        (MPI_MAX, MPI_C_DOUBLE_COMPLEX),
        (MPI_BAND, MPI_FLOAT),
        (MPI_MINLOC, MPI_INT),
        (MPI_SUM, MPI_2INT),
        (MPI_SUM, MPI_C_BOOL),
        (MPI_MAX, MPI_PACKED),
    ] {
        let e = Reduction::new(&Op::from_handle(op).unwrap(), dt).err().unwrap();
        assert_eq!(e.code, MPI_ERR_OP, "{op:x} {dt:x}");
    }
    assert_eq!(Op::from_handle(MPI_OP_NULL).err().unwrap().code, MPI_ERR_OP);
    assert_eq!(Op::from_handle(0x5800_000f).err().unwrap().code, MPI_ERR_OP);
    assert_eq!(Reduction::new(&Op::Builtin(Builtin::Sum), MPI_DATATYPE_NULL).err().unwrap().code, MPI_ERR_TYPE);
    assert!(Reduction::new(&Op::Builtin(Builtin::Replace), MPI_PACKED).is_ok());
    // Logical operations on floating types are an MPICH extension programs rely on.
    assert!(Reduction::new(&Op::Builtin(Builtin::Lxor), MPI_DOUBLE).is_ok());
}

#[test]
fn user_ops_see_memory_layout_and_order() {
    // Records the operand order: inout = in * 10 + inout, on ints (not commutative).
    let h = create(
        Box::new(|a: &[u8], b: &mut [u8], el: Elements, _dt| {
            assert_eq!((el.origin, el.extent), (0, 4));
            for i in 0..el.count {
                let x = i32::from_ne_bytes(a[i * 4..i * 4 + 4].try_into().unwrap());
                let y = i32::from_ne_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
                b[i * 4..i * 4 + 4].copy_from_slice(&(x * 10 + y).to_ne_bytes());
            }
        }),
        false,
    );
    assert_eq!(h as u32 & 0xfc00_0000, 0x9800_0000);
    let op = Op::from_handle(h).unwrap();
    assert!(!op.is_commutative());
    assert_eq!(ints(h, MPI_INT, [1, 2, 3, 4], [5, 6, 7, 8]), [15, 26, 37, 48]);
    // A padded type: the user function gets 16-byte elements (double, int, padding).
    let seen = std::sync::Arc::new(std::sync::Mutex::new(0usize));
    let s2 = seen.clone();
    let h2 = create(
        Box::new(move |a: &[u8], _b: &mut [u8], el: Elements, _| {
            assert_eq!(el.origin, 0);
            *s2.lock().unwrap() = a.len() / el.count;
        }),
        true,
    );
    let red = Reduction::new(&Op::from_handle(h2).unwrap(), MPI_DOUBLE_INT).unwrap();
    let mut out = vec![0u8; 24];
    red.apply(&[0u8; 24], &mut out);
    assert_eq!(*seen.lock().unwrap(), 16);
    free(h).unwrap();
    free(h2).unwrap();
    assert_eq!(Op::from_handle(h).err().unwrap().code, MPI_ERR_OP);
    assert_eq!(free(MPI_SUM).err().unwrap().code, MPI_ERR_OP);
}
