//! The predefined operations' kernels: one loop per (operation, element type) over packed bytes,
//! read and written with `from_ne_bytes`/`to_ne_bytes` so no alignment is assumed. The loops
//! are monomorphised per type, which lets the compiler vectorise them.

use super::Builtin;
use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::error::{MpiResult, err};
use std::cmp::Ordering;

/// `kernel(in, inout)`: `inout[i] = in[i] op inout[i]` on packed elements.
pub type Kernel = fn(&[u8], &mut [u8]);

/// What one packed element of a predefined datatype is, for the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Elem {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// x87 80-bit extended precision in 16 bytes (C `long double` on x86-64).
    F80,
    /// Types whose arithmetic oxmpi does not have yet (REAL16 = quad, float16).
    NoArith,
    C32,
    C64,
    /// `long double _Complex`: two x87 values.
    C80,
    /// C `_Bool` / C++ `bool`: one byte, 0 or 1.
    Bool,
    /// Fortran LOGICAL: a 4-byte integer, nonzero is true.
    Logical,
    Byte,
    /// MINLOC/MAXLOC pairs (value, index), packed.
    PairF32I32,
    PairF64I32,
    PairI64I32,
    PairI32I32,
    PairI16I32,
    PairF80I32,
    PairF32F32,
    PairF64F64,
    /// Types no predefined operation but REPLACE/NO_OP applies to (PACKED, CHARACTER, ...).
    Opaque,
}

/// The element kind of every predefined datatype (C integer types include MPI_CHAR and
/// MPI_WCHAR, as MPICH allows).
const ELEMS: &[(MPI_Datatype, Elem)] = &[
    (MPI_CHAR, Elem::I8),
    (MPI_SIGNED_CHAR, Elem::I8),
    (MPI_UNSIGNED_CHAR, Elem::U8),
    (MPI_WCHAR, Elem::I32),
    (MPI_SHORT, Elem::I16),
    (MPI_UNSIGNED_SHORT, Elem::U16),
    (MPI_INT, Elem::I32),
    (MPI_UNSIGNED, Elem::U32),
    (MPI_LONG, Elem::I64),
    (MPI_UNSIGNED_LONG, Elem::U64),
    (MPI_LONG_LONG_INT, Elem::I64),
    (MPI_LONG_LONG, Elem::I64),
    (MPI_UNSIGNED_LONG_LONG, Elem::U64),
    (MPI_INT8_T, Elem::I8),
    (MPI_INT16_T, Elem::I16),
    (MPI_INT32_T, Elem::I32),
    (MPI_INT64_T, Elem::I64),
    (MPI_UINT8_T, Elem::U8),
    (MPI_UINT16_T, Elem::U16),
    (MPI_UINT32_T, Elem::U32),
    (MPI_UINT64_T, Elem::U64),
    (MPI_AINT, Elem::I64),
    (MPI_OFFSET, Elem::I64),
    (MPI_COUNT, Elem::I64),
    (MPI_INTEGER, Elem::I32),
    (MPI_INTEGER1, Elem::I8),
    (MPI_INTEGER2, Elem::I16),
    (MPI_INTEGER4, Elem::I32),
    (MPI_INTEGER8, Elem::I64),
    (MPI_FLOAT, Elem::F32),
    (MPI_DOUBLE, Elem::F64),
    (MPI_LONG_DOUBLE, Elem::F80),
    (MPI_REAL, Elem::F32),
    (MPI_DOUBLE_PRECISION, Elem::F64),
    (MPI_REAL4, Elem::F32),
    (MPI_REAL8, Elem::F64),
    (MPI_REAL16, Elem::NoArith),
    (MPIX_C_FLOAT16, Elem::NoArith),
    (MPI_COMPLEX, Elem::C32),
    (MPI_DOUBLE_COMPLEX, Elem::C64),
    (MPI_COMPLEX8, Elem::C32),
    (MPI_COMPLEX16, Elem::C64),
    (MPI_COMPLEX32, Elem::NoArith),
    (MPI_C_FLOAT_COMPLEX, Elem::C32),
    (MPI_C_COMPLEX, Elem::C32),
    (MPI_C_DOUBLE_COMPLEX, Elem::C64),
    (MPI_C_LONG_DOUBLE_COMPLEX, Elem::C80),
    (MPI_CXX_FLOAT_COMPLEX, Elem::C32),
    (MPI_CXX_DOUBLE_COMPLEX, Elem::C64),
    (MPI_CXX_LONG_DOUBLE_COMPLEX, Elem::C80),
    (MPI_C_BOOL, Elem::Bool),
    (MPI_CXX_BOOL, Elem::Bool),
    (MPI_LOGICAL, Elem::Logical),
    (MPI_BYTE, Elem::Byte),
    (MPI_FLOAT_INT, Elem::PairF32I32),
    (MPI_DOUBLE_INT, Elem::PairF64I32),
    (MPI_LONG_INT, Elem::PairI64I32),
    (MPI_2INT, Elem::PairI32I32),
    (MPI_SHORT_INT, Elem::PairI16I32),
    (MPI_LONG_DOUBLE_INT, Elem::PairF80I32),
    (MPI_2REAL, Elem::PairF32F32),
    (MPI_2DOUBLE_PRECISION, Elem::PairF64F64),
    (MPI_2INTEGER, Elem::PairI32I32),
];

/// The integer or floating-point type of the elements of predefined `dt`, if it is one of
/// those (MPI_BYTE as an unsigned byte): what the sparse reductions encode.
pub(crate) fn scalar_elem(dt: MPI_Datatype) -> Option<Elem> {
    match elem_of(dt).ok()? {
        Elem::Byte => Some(Elem::U8),
        e @ (Elem::I8 | Elem::I16 | Elem::I32 | Elem::I64 | Elem::U8 | Elem::U16 | Elem::U32 | Elem::U64) => Some(e),
        e @ (Elem::F32 | Elem::F64) => Some(e),
        _ => None,
    }
}

/// Whether MPI_Compare_and_swap takes predefined `dt`: the C and Fortran integers, the
/// logicals, MPI_BYTE and the multi-language types (MPI-4.1 section 12.3.4), and the C
/// character types, which are integers to C (as MPICH); not floating point or complex.
pub(crate) fn compares_and_swaps(dt: MPI_Datatype) -> bool {
    matches!(
        elem_of(dt),
        Ok(Elem::I8
            | Elem::I16
            | Elem::I32
            | Elem::I64
            | Elem::U8
            | Elem::U16
            | Elem::U32
            | Elem::U64
            | Elem::Bool
            | Elem::Logical
            | Elem::Byte)
    )
}

/// `ELEMS` by `elem_slot`, built at compile time: a reduction is set up at every collective
/// call, and a search of the list took ~60 instructions of an 8-byte MPI_Allreduce. The slot
/// is the handle's index byte, and whether it is a builtin or a pair type (MPICH numbers
/// those apart), unique among the predefined types; a handle found there is compared whole.
static ELEM_BY_SLOT: [Option<(MPI_Datatype, Elem)>; 512] = {
    let mut table = [None; 512];
    let mut i = 0;
    while i < ELEMS.len() {
        let slot = elem_slot(ELEMS[i].0);
        if table[slot].is_none() {
            table[slot] = Some(ELEMS[i]);
        }
        i += 1;
    }
    table
};

const fn elem_slot(dt: MPI_Datatype) -> usize {
    (dt as u32 & 0xff | (dt as u32 >> 31) << 8) as usize
}

fn elem_of(dt: MPI_Datatype) -> MpiResult<Elem> {
    if let Some((d, e)) = ELEM_BY_SLOT[elem_slot(dt)]
        && d == dt
    {
        return Ok(e);
    }
    crate::datatype::layout(dt)?;
    Ok(Elem::Opaque)
}

/// The kernel of `op` on `dt`, or MPI_ERR_OP when the standard does not define that pair.
pub fn kernel(op: Builtin, dt: MPI_Datatype) -> MpiResult<Kernel> {
    let elem = elem_of(dt)?;
    match op {
        Builtin::Replace => return Ok(replace),
        Builtin::NoOp => return Ok(no_op),
        _ => {}
    }
    let k: Option<Kernel> = match elem {
        Elem::I8 => int_kernel::<i8>(op),
        Elem::I16 => int_kernel::<i16>(op),
        Elem::I32 => int_kernel::<i32>(op),
        Elem::I64 => int_kernel::<i64>(op),
        Elem::U8 => int_kernel::<u8>(op),
        Elem::U16 => int_kernel::<u16>(op),
        Elem::U32 => int_kernel::<u32>(op),
        Elem::U64 => int_kernel::<u64>(op),
        Elem::F32 => float_kernel::<f32>(op),
        Elem::F64 => float_kernel::<f64>(op),
        Elem::F80 => match op {
            Builtin::Max => Some(k_max::<F80>),
            Builtin::Min => Some(k_min::<F80>),
            Builtin::Sum if F80::ARITH => Some(k_fsum::<F80>),
            Builtin::Prod if F80::ARITH => Some(k_fprod::<F80>),
            Builtin::Sum | Builtin::Prod => return not_yet(op, dt, "long double"),
            // Logical operations on floating types, as for float and double.
            _ => logical_kernel::<F80>(op),
        },
        Elem::C32 => complex_kernel::<f32>(op),
        Elem::C64 => complex_kernel::<f64>(op),
        Elem::C80 if F80::ARITH => complex_kernel::<F80>(op),
        Elem::C80 => match op {
            Builtin::Sum | Builtin::Prod => return not_yet(op, dt, "long double complex"),
            _ => None,
        },
        Elem::NoArith => match op {
            Builtin::Max | Builtin::Min | Builtin::Sum | Builtin::Prod => {
                return not_yet(op, dt, "this floating-point type");
            }
            _ => None,
        },
        Elem::Bool => logical_kernel::<u8>(op),
        Elem::Logical => logical_kernel::<i32>(op),
        Elem::Byte => match op {
            Builtin::Band => Some(k_band::<u8>),
            Builtin::Bor => Some(k_bor::<u8>),
            Builtin::Bxor => Some(k_bxor::<u8>),
            _ => None,
        },
        Elem::PairF32I32 => loc_kernel::<f32, i32>(op),
        Elem::PairF64I32 => loc_kernel::<f64, i32>(op),
        Elem::PairI64I32 => loc_kernel::<i64, i32>(op),
        Elem::PairI32I32 => loc_kernel::<i32, i32>(op),
        Elem::PairI16I32 => loc_kernel::<i16, i32>(op),
        Elem::PairF80I32 => loc_kernel::<F80, i32>(op),
        Elem::PairF32F32 => loc_kernel::<f32, f32>(op),
        Elem::PairF64F64 => loc_kernel::<f64, f64>(op),
        Elem::Opaque => None,
    };
    match k {
        Some(k) => Ok(k),
        None => err(
            MPI_ERR_OP,
            format!(
                "invalid operation: {} is not defined for datatype {} (0x{:08x})",
                op.name(),
                type_name(dt),
                dt as u32
            ),
        ),
    }
}

fn not_yet<T>(op: Builtin, dt: MPI_Datatype, what: &str) -> MpiResult<T> {
    err(MPI_ERR_OP, format!("{} on {what} ({}) is not implemented yet in oxmpi", op.name(), type_name(dt)))
}

fn type_name(dt: MPI_Datatype) -> &'static str {
    match dt {
        MPI_LONG_DOUBLE => "MPI_LONG_DOUBLE",
        MPI_C_LONG_DOUBLE_COMPLEX => "MPI_C_LONG_DOUBLE_COMPLEX",
        MPI_CXX_LONG_DOUBLE_COMPLEX => "MPI_CXX_LONG_DOUBLE_COMPLEX",
        MPI_REAL16 => "MPI_REAL16",
        MPI_COMPLEX32 => "MPI_COMPLEX32",
        MPIX_C_FLOAT16 => "MPIX_C_FLOAT16",
        MPI_BYTE => "MPI_BYTE",
        MPI_PACKED => "MPI_PACKED",
        MPI_C_BOOL => "MPI_C_BOOL",
        MPI_LOGICAL => "MPI_LOGICAL",
        _ => "a predefined datatype",
    }
}

fn replace(input: &[u8], inout: &mut [u8]) {
    inout.copy_from_slice(input);
}

fn no_op(_input: &[u8], _inout: &mut [u8]) {}

/// A fixed-size element read from and written to packed bytes.
trait Scalar: Copy {
    const SIZE: usize;
    fn load(b: &[u8]) -> Self;
    fn store(self, b: &mut [u8]);
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().unwrap())
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
scalar!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// `inout = f(in, inout)` over every element.
#[inline(always)]
fn zip_with<T: Scalar>(input: &[u8], inout: &mut [u8], f: impl Fn(T, T) -> T) {
    for (a, b) in input.chunks_exact(T::SIZE).zip(inout.chunks_exact_mut(T::SIZE)) {
        f(T::load(a), T::load(b)).store(b);
    }
}

/// Values with a truth value for the logical operations: zero is false, anything else true.
trait Logical: Scalar + PartialEq {
    const ZERO: Self;
    const ONE: Self;
}

trait Int:
    Logical + Ord + std::ops::BitAnd<Output = Self> + std::ops::BitOr<Output = Self> + std::ops::BitXor<Output = Self>
{
    fn wadd(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Logical for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
        }
        impl Int for $t {
            #[inline(always)]
            fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn wmul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
    )*};
}
int!(i8, i16, i32, i64, u8, u16, u32, u64);

trait Float:
    Scalar + PartialOrd + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self>
{
}
impl Float for f32 {}
impl Float for f64 {}
impl Logical for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}
impl Logical for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

// Element loops, one generic fn per operation so each (operation, type) is its own
// monomorphised kernel. MAX/MIN follow C's `a > b ? a : b` (what MPICH computes).

fn k_max<T: Scalar + PartialOrd>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| if a > b { a } else { b })
}
fn k_min<T: Scalar + PartialOrd>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| if a < b { a } else { b })
}
fn k_sum<T: Int>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| a.wadd(b))
}
fn k_prod<T: Int>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| a.wmul(b))
}
fn k_fsum<T: Float>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| a + b)
}
fn k_fprod<T: Float>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| a * b)
}
fn truth<T: Logical>(v: bool) -> T {
    if v { T::ONE } else { T::ZERO }
}
fn k_land<T: Logical>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| truth(a != T::ZERO && b != T::ZERO))
}
fn k_lor<T: Logical>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| truth(a != T::ZERO || b != T::ZERO))
}
fn k_lxor<T: Logical>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| truth((a != T::ZERO) != (b != T::ZERO)))
}
fn k_band<T: Int>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| a & b)
}
fn k_bor<T: Int>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| a | b)
}
fn k_bxor<T: Int>(i: &[u8], o: &mut [u8]) {
    zip_with::<T>(i, o, |a, b| a ^ b)
}
fn k_csum<F: Float>(i: &[u8], o: &mut [u8]) {
    zip_with::<Complex<F>>(i, o, |a, b| Complex { re: a.re + b.re, im: a.im + b.im })
}
fn k_cprod<F: Float>(i: &[u8], o: &mut [u8]) {
    zip_with::<Complex<F>>(i, o, |a, b| Complex { re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re })
}
fn k_minloc<V: Scalar + PartialOrd, I: Scalar + PartialOrd>(i: &[u8], o: &mut [u8]) {
    zip_with::<Pair<V, I>>(i, o, |a, b| loc(a, b, Ordering::Less))
}
fn k_maxloc<V: Scalar + PartialOrd, I: Scalar + PartialOrd>(i: &[u8], o: &mut [u8]) {
    zip_with::<Pair<V, I>>(i, o, |a, b| loc(a, b, Ordering::Greater))
}

/// MINLOC (`wins` = Less) / MAXLOC (`wins` = Greater): the winning value with its index; on
/// a tie the lower index, as MPI specifies.
#[inline(always)]
fn loc<V: PartialOrd + Copy, I: PartialOrd + Copy>(a: Pair<V, I>, b: Pair<V, I>, wins: Ordering) -> Pair<V, I> {
    match a.value.partial_cmp(&b.value) {
        Some(o) if o == wins => a,
        Some(Ordering::Equal) => Pair { value: a.value, index: if b.index < a.index { b.index } else { a.index } },
        _ => b,
    }
}

fn int_kernel<T: Int>(op: Builtin) -> Option<Kernel> {
    Some(match op {
        Builtin::Max => k_max::<T>,
        Builtin::Min => k_min::<T>,
        Builtin::Sum => k_sum::<T>,
        Builtin::Prod => k_prod::<T>,
        Builtin::Land => k_land::<T>,
        Builtin::Lor => k_lor::<T>,
        Builtin::Lxor => k_lxor::<T>,
        Builtin::Band => k_band::<T>,
        Builtin::Bor => k_bor::<T>,
        Builtin::Bxor => k_bxor::<T>,
        _ => return None,
    })
}

fn float_kernel<T: Float + Logical>(op: Builtin) -> Option<Kernel> {
    Some(match op {
        Builtin::Max => k_max::<T>,
        Builtin::Min => k_min::<T>,
        Builtin::Sum => k_fsum::<T>,
        Builtin::Prod => k_fprod::<T>,
        // Logical operations on floating types: an MPICH extension that programs rely on.
        Builtin::Land => k_land::<T>,
        Builtin::Lor => k_lor::<T>,
        Builtin::Lxor => k_lxor::<T>,
        _ => return None,
    })
}

fn complex_kernel<F: Float>(op: Builtin) -> Option<Kernel> {
    Some(match op {
        Builtin::Sum => k_csum::<F>,
        Builtin::Prod => k_cprod::<F>,
        _ => return None,
    })
}

fn logical_kernel<T: Logical>(op: Builtin) -> Option<Kernel> {
    Some(match op {
        Builtin::Land => k_land::<T>,
        Builtin::Lor => k_lor::<T>,
        Builtin::Lxor => k_lxor::<T>,
        _ => return None,
    })
}

fn loc_kernel<V: Scalar + PartialOrd, I: Scalar + PartialOrd>(op: Builtin) -> Option<Kernel> {
    Some(match op {
        Builtin::Minloc => k_minloc::<V, I>,
        Builtin::Maxloc => k_maxloc::<V, I>,
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
struct Complex<F> {
    re: F,
    im: F,
}

impl<F: Scalar> Scalar for Complex<F> {
    const SIZE: usize = 2 * F::SIZE;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        Complex { re: F::load(&b[..F::SIZE]), im: F::load(&b[F::SIZE..]) }
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        self.re.store(&mut b[..F::SIZE]);
        self.im.store(&mut b[F::SIZE..]);
    }
}

/// A MINLOC/MAXLOC element, packed: the value, then the index.
#[derive(Clone, Copy)]
struct Pair<V, I> {
    value: V,
    index: I,
}

impl<V: Scalar, I: Scalar> Scalar for Pair<V, I> {
    const SIZE: usize = V::SIZE + I::SIZE;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        Pair { value: V::load(&b[..V::SIZE]), index: I::load(&b[V::SIZE..]) }
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        self.value.store(&mut b[..V::SIZE]);
        self.index.store(&mut b[V::SIZE..]);
    }
}

/// An x87 80-bit extended value as stored in 16 bytes: 64-bit significand (explicit integer
/// bit), then sign and 15-bit exponent, then 6 bytes of padding. Compared exactly in software
/// and added/multiplied on the x87 unit, never converted, so results match C's bit for bit.
#[derive(Clone, Copy)]
pub(super) struct F80([u8; 16]);

impl F80 {
    fn significand(&self) -> u64 {
        u64::from_le_bytes(self.0[..8].try_into().unwrap())
    }
    fn sign_exp(&self) -> u16 {
        u16::from_le_bytes([self.0[8], self.0[9]])
    }
    fn is_nan(&self) -> bool {
        self.sign_exp() & 0x7fff == 0x7fff && self.significand() << 1 != 0
    }
    fn is_zero(&self) -> bool {
        self.sign_exp() & 0x7fff == 0 && self.significand() == 0
    }
    /// Magnitude as an integer that orders like the value's absolute value.
    fn magnitude(&self) -> u128 {
        ((self.sign_exp() & 0x7fff) as u128) << 64 | self.significand() as u128
    }
}

/// Arithmetic on x87 values runs on the x87 unit itself, so sums and products are rounded
/// exactly as C computes them (the control word's default 64-bit precision).
#[cfg(target_arch = "x86_64")]
impl F80 {
    const ARITH: bool = true;

    /// `a <op> b` with one x87 instruction (`faddp`, `fmulp`, `fsubp`: st(1) <op> st(0)).
    #[inline(always)]
    fn x87(a: F80, b: F80, op: X87Op) -> F80 {
        let mut r = F80([0; 16]);
        // SAFETY: the asm reads 10 bytes at each of `a` and `b` and writes 10 bytes into `r`,
        // all 16-byte locals; every x87 register is declared clobbered, so the x87 stack is
        // empty on entry, and the two loads are popped by the arithmetic and the store, so it
        // is empty again on exit, as the asm rules require.
        unsafe {
            macro_rules! x87_binary {
                ($insn:literal) => {
                    std::arch::asm!(
                        "fld tbyte ptr [{a}]",
                        "fld tbyte ptr [{b}]",
                        $insn,
                        "fstp tbyte ptr [{r}]",
                        a = in(reg) a.0.as_ptr(),
                        b = in(reg) b.0.as_ptr(),
                        r = in(reg) r.0.as_mut_ptr(),
                        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                        options(nostack),
                    )
                };
            }
            match op {
                X87Op::Add => x87_binary!("faddp st(1), st"),
                X87Op::Mul => x87_binary!("fmulp st(1), st"),
                // a - b = st(1) - st(0): the assembler keeps the historical AT&T swap of
                // fsubp/fsubrp with a register destination (checked by the op tests).
                X87Op::Sub => x87_binary!("fsubp st(1), st"),
            }
        }
        r
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl F80 {
    const ARITH: bool = false;

    fn x87(_: F80, _: F80, _: X87Op) -> F80 {
        unreachable!("long double arithmetic is only selected on x86-64")
    }
}

#[derive(Clone, Copy)]
enum X87Op {
    Add,
    Mul,
    Sub,
}

impl std::ops::Add for F80 {
    type Output = F80;
    fn add(self, o: F80) -> F80 {
        F80::x87(self, o, X87Op::Add)
    }
}
impl std::ops::Mul for F80 {
    type Output = F80;
    fn mul(self, o: F80) -> F80 {
        F80::x87(self, o, X87Op::Mul)
    }
}
impl std::ops::Sub for F80 {
    type Output = F80;
    fn sub(self, o: F80) -> F80 {
        F80::x87(self, o, X87Op::Sub)
    }
}
impl Float for F80 {}
impl Logical for F80 {
    const ZERO: Self = F80([0; 16]);
    /// 1.0: significand with only the explicit integer bit, biased exponent 0x3fff.
    const ONE: Self = F80([0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f, 0, 0, 0, 0, 0, 0]);
}

impl Scalar for F80 {
    const SIZE: usize = 16;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        F80(b.try_into().unwrap())
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        b.copy_from_slice(&self.0);
    }
}

impl PartialEq for F80 {
    fn eq(&self, o: &Self) -> bool {
        self.partial_cmp(o) == Some(Ordering::Equal)
    }
}

impl PartialOrd for F80 {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        if self.is_nan() || o.is_nan() {
            return None;
        }
        if self.is_zero() && o.is_zero() {
            return Some(Ordering::Equal);
        }
        let (neg_a, neg_b) = (self.sign_exp() & 0x8000 != 0, o.sign_exp() & 0x8000 != 0);
        Some(match (neg_a, neg_b) {
            (false, false) => self.magnitude().cmp(&o.magnitude()),
            (true, true) => o.magnitude().cmp(&self.magnitude()),
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_predefined_type_finds_its_element_kind() {
        for &(dt, e) in ELEMS {
            assert_eq!(elem_of(dt).ok(), Some(e), "datatype 0x{:08x}", dt as u32);
        }
        // Each is found in one step.
        assert!(ELEMS.iter().all(|(dt, _)| ELEM_BY_SLOT[elem_slot(*dt)].is_some_and(|(d, _)| d == *dt)));
        assert!(elem_of(MPI_DATATYPE_NULL).is_err());
    }
}
