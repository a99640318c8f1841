//! The predefined datatypes: MPICH's builtin handles (size in bits 15..8 of the handle) and
//! the five padded pair types, with what the engine needs to know about each: its MPI name,
//! its basic components (what MPI_Get_elements counts and external32 converts) and the
//! external32 size of those components.

use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;

/// How one basic component converts to external32 (big-endian, fixed sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ext32 {
    /// Bytes reversed in units of `unit` (a complex number is two units).
    Swap { unit: usize },
    /// A signed integer narrowed or widened to `bytes` (MPI_LONG is 4 bytes in external32).
    Signed { bytes: usize },
    /// An unsigned integer narrowed or widened to `bytes`.
    Unsigned { bytes: usize },
}

/// A predefined datatype.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    pub handle: MPI_Datatype,
    pub name: &'static str,
    /// Native bytes of one element.
    pub size: usize,
    /// Alignment the C compiler gives it (used to pad struct extents as MPICH does).
    pub align: usize,
    /// Its conversion when it is a basic type (pair types list their parts instead).
    pub ext32: Ext32,
}

const fn swap(unit: usize) -> Ext32 {
    Ext32::Swap { unit }
}

macro_rules! builtins {
    ($($h:ident $align:literal $ext:expr;)*) => {
        /// Every builtin handle, in MPICH's index order where it matters for names: the first
        /// entry for an aliased handle gives the name (MPICH names MPI_LONG_LONG
        /// "MPI_LONG_LONG_INT" and MPI_C_FLOAT_COMPLEX "MPI_C_COMPLEX").
        pub static BUILTINS: &[Builtin] = &BUILTIN_ARRAY;
        const BUILTIN_ARRAY: [Builtin; [$($h),*].len()] = [$(Builtin {
            handle: $h,
            name: stringify!($h),
            size: (($h as u32 >> 8) & 0xff) as usize,
            align: $align,
            ext32: $ext,
        }),*];
    };
}

builtins! {
    MPI_CHAR 1 swap(1);
    MPI_SIGNED_CHAR 1 swap(1);
    MPI_UNSIGNED_CHAR 1 swap(1);
    MPI_BYTE 1 swap(1);
    MPI_WCHAR 4 Ext32::Unsigned { bytes: 2 };
    MPI_SHORT 2 swap(2);
    MPI_UNSIGNED_SHORT 2 swap(2);
    MPI_INT 4 swap(4);
    MPI_UNSIGNED 4 swap(4);
    MPI_LONG 8 Ext32::Signed { bytes: 4 };
    MPI_UNSIGNED_LONG 8 Ext32::Unsigned { bytes: 4 };
    MPI_FLOAT 4 swap(4);
    MPI_DOUBLE 8 swap(8);
    MPI_LONG_DOUBLE 16 swap(16);
    MPI_LONG_LONG_INT 8 swap(8);
    MPI_UNSIGNED_LONG_LONG 8 swap(8);
    MPI_PACKED 1 swap(1);
    MPI_LB 1 swap(1);
    MPI_UB 1 swap(1);
    MPI_2INT 4 swap(4);
    MPI_COMPLEX 4 swap(4);
    MPI_DOUBLE_COMPLEX 8 swap(8);
    MPI_LOGICAL 4 swap(4);
    MPI_REAL 4 swap(4);
    MPI_DOUBLE_PRECISION 8 swap(8);
    MPI_INTEGER 4 swap(4);
    MPI_2INTEGER 4 swap(4);
    MPI_2REAL 4 swap(4);
    MPI_2DOUBLE_PRECISION 8 swap(8);
    MPI_CHARACTER 1 swap(1);
    MPI_REAL4 4 swap(4);
    MPI_REAL8 8 swap(8);
    MPI_REAL16 16 swap(16);
    MPI_COMPLEX8 4 swap(4);
    MPI_COMPLEX16 8 swap(8);
    MPI_COMPLEX32 16 swap(16);
    MPI_INTEGER1 1 swap(1);
    MPI_INTEGER2 2 swap(2);
    MPI_INTEGER4 4 swap(4);
    MPI_INTEGER8 8 swap(8);
    MPI_INT8_T 1 swap(1);
    MPI_INT16_T 2 swap(2);
    MPI_INT32_T 4 swap(4);
    MPI_INT64_T 8 swap(8);
    MPI_UINT8_T 1 swap(1);
    MPI_UINT16_T 2 swap(2);
    MPI_UINT32_T 4 swap(4);
    MPI_UINT64_T 8 swap(8);
    MPI_C_BOOL 1 swap(1);
    MPI_C_COMPLEX 4 swap(4);
    MPI_C_DOUBLE_COMPLEX 8 swap(8);
    MPI_C_LONG_DOUBLE_COMPLEX 16 swap(16);
    MPIX_C_FLOAT16 2 swap(2);
    MPI_AINT 8 swap(8);
    MPI_OFFSET 8 swap(8);
    MPI_COUNT 8 swap(8);
    MPI_CXX_BOOL 1 swap(1);
    MPI_CXX_FLOAT_COMPLEX 4 swap(4);
    MPI_CXX_DOUBLE_COMPLEX 8 swap(8);
    MPI_CXX_LONG_DOUBLE_COMPLEX 16 swap(16);
}

/// For each value of a builtin handle's low byte (MPICH's index of the builtin), 1 + the
/// position in `BUILTINS` of the first entry with that index, or 0. Built at compile time so
/// `builtin` is O(1) on the path of every send and receive.
static BY_INDEX: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < BUILTIN_ARRAY.len() {
        let low = (BUILTIN_ARRAY[i].handle as u32 & 0xff) as usize;
        if table[low] == 0 {
            table[low] = (i + 1) as u8;
        }
        i += 1;
    }
    table
};

/// The builtin entry of `dt`, if it is a builtin handle: kind BUILTIN + object DATATYPE
/// checked arithmetically, then the index byte looked up and the whole handle compared (so a
/// handle with a valid index but another size is rejected).
#[inline]
pub fn builtin(dt: MPI_Datatype) -> Option<&'static Builtin> {
    if (dt as u32) >> 26 != 0x13 {
        return None;
    }
    let at = BY_INDEX[(dt as u32 & 0xff) as usize] as usize;
    let b = BUILTINS.get(at.checked_sub(1)?)?;
    (b.handle == dt).then_some(b)
}

/// A pair type: its parts as (offset, basic type), its extent and alignment.
#[derive(Debug)]
pub struct Pair {
    pub handle: MPI_Datatype,
    pub name: &'static str,
    pub parts: [(usize, MPI_Datatype); 2],
    pub extent: usize,
    pub align: usize,
}

/// MPICH's pair types (C struct layout on x86-64: value first, then the int).
pub static PAIRS: [Pair; 5] = [
    Pair { handle: MPI_FLOAT_INT, name: "MPI_FLOAT_INT", parts: [(0, MPI_FLOAT), (4, MPI_INT)], extent: 8, align: 4 },
    Pair {
        handle: MPI_DOUBLE_INT,
        name: "MPI_DOUBLE_INT",
        parts: [(0, MPI_DOUBLE), (8, MPI_INT)],
        extent: 16,
        align: 8,
    },
    Pair { handle: MPI_LONG_INT, name: "MPI_LONG_INT", parts: [(0, MPI_LONG), (8, MPI_INT)], extent: 16, align: 8 },
    Pair { handle: MPI_SHORT_INT, name: "MPI_SHORT_INT", parts: [(0, MPI_SHORT), (4, MPI_INT)], extent: 8, align: 4 },
    Pair {
        handle: MPI_LONG_DOUBLE_INT,
        name: "MPI_LONG_DOUBLE_INT",
        parts: [(0, MPI_LONG_DOUBLE), (16, MPI_INT)],
        extent: 32,
        align: 16,
    },
];

pub fn pair(dt: MPI_Datatype) -> Option<&'static Pair> {
    PAIRS.iter().find(|p| p.handle == dt)
}

/// The basic components of a builtin element: the 2-element builtins (MPI_2INT, ...) count
/// as two basic elements, as in MPICH.
pub fn basic_parts(b: &Builtin) -> (MPI_Datatype, usize) {
    match b.handle {
        MPI_2INT => (MPI_INT, 2),
        MPI_2INTEGER => (MPI_INTEGER, 2),
        MPI_2REAL => (MPI_REAL, 2),
        MPI_2DOUBLE_PRECISION => (MPI_DOUBLE_PRECISION, 2),
        h => (h, 1),
    }
}

/// Native and external32 bytes of one basic element.
pub fn ext32_size(b: &Builtin) -> usize {
    match b.ext32 {
        Ext32::Swap { .. } => b.size,
        Ext32::Signed { bytes } | Ext32::Unsigned { bytes } => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_found_by_its_handle_and_gives_the_first_name() {
        for b in BUILTINS {
            let found = builtin(b.handle).expect("a builtin handle not found");
            let first = BUILTINS.iter().find(|c| c.handle == b.handle).unwrap();
            assert_eq!(found.name, first.name);
        }
        // Valid index byte, wrong size bits; and not a builtin at all.
        assert!(builtin(((MPI_INT as u32) ^ 0x0100) as MPI_Datatype).is_none());
        assert!(builtin(0x8c00_0000u32 as MPI_Datatype).is_none());
    }
}
