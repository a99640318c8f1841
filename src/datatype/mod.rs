//! Datatypes. This milestone knows the predefined types: the builtin ones (contiguous, their
//! size encoded in the handle) and MPICH's five padded pair types. Derived types come with the
//! datatype engine; their layout is the same `Layout` described here.

use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::error::{MpiResult, err};

/// The memory layout of one element of a datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of data in one element (the type signature's length).
    pub size: usize,
    /// Distance between consecutive elements.
    pub extent: usize,
    /// The data blocks of one element, as (offset, length); empty means one block (0, size).
    pub blocks: &'static [(usize, usize)],
}

impl Layout {
    const fn contiguous(size: usize) -> Layout {
        Layout { size, extent: size, blocks: &[] }
    }

    /// Whether `count` elements occupy exactly `count * size` bytes with no gaps.
    pub fn is_contiguous(&self) -> bool {
        self.blocks.is_empty() && self.extent == self.size
    }

    /// Calls `f(offset, len)` for every data block of `count` elements, in order.
    pub fn for_each_block(&self, count: usize, mut f: impl FnMut(usize, usize)) {
        if self.is_contiguous() {
            if self.size * count > 0 {
                f(0, self.size * count);
            }
            return;
        }
        for i in 0..count {
            let base = i * self.extent;
            if self.blocks.is_empty() {
                f(base, self.size);
            } else {
                for &(off, len) in self.blocks {
                    f(base + off, len);
                }
            }
        }
    }

    /// The span of memory `count` elements touch, from the buffer start.
    pub fn span(&self, count: usize) -> usize {
        if count == 0 { 0 } else { (count - 1) * self.extent + self.data_end() }
    }

    fn data_end(&self) -> usize {
        self.blocks.iter().map(|&(o, l)| o + l).max().unwrap_or(self.size)
    }
}

/// The layout of MPI_BYTE, used for the engine's own messages.
pub const BYTE: Layout = Layout::contiguous(1);

/// Layouts of MPICH's pair types (C struct layout on x86-64: value first, then the int).
static FLOAT_INT: Layout = Layout { size: 8, extent: 8, blocks: &[] };
static DOUBLE_INT: Layout = Layout { size: 12, extent: 16, blocks: &[(0, 12)] };
static LONG_INT: Layout = Layout { size: 12, extent: 16, blocks: &[(0, 12)] };
static SHORT_INT: Layout = Layout { size: 6, extent: 8, blocks: &[(0, 2), (4, 4)] };
static LONG_DOUBLE_INT: Layout = Layout { size: 20, extent: 32, blocks: &[(0, 16), (16, 4)] };

/// Every builtin datatype handle (kind BUILTIN, object DATATYPE); their size is bits 15..8.
const BUILTIN: &[MPI_Datatype] = &[
    MPI_CHAR,
    MPI_SIGNED_CHAR,
    MPI_UNSIGNED_CHAR,
    MPI_BYTE,
    MPI_WCHAR,
    MPI_SHORT,
    MPI_UNSIGNED_SHORT,
    MPI_INT,
    MPI_UNSIGNED,
    MPI_LONG,
    MPI_UNSIGNED_LONG,
    MPI_FLOAT,
    MPI_DOUBLE,
    MPI_LONG_DOUBLE,
    MPI_LONG_LONG_INT,
    MPI_UNSIGNED_LONG_LONG,
    MPI_PACKED,
    MPI_LB,
    MPI_UB,
    MPI_2INT,
    MPI_COMPLEX,
    MPI_DOUBLE_COMPLEX,
    MPI_LOGICAL,
    MPI_REAL,
    MPI_DOUBLE_PRECISION,
    MPI_INTEGER,
    MPI_2INTEGER,
    MPI_2REAL,
    MPI_2DOUBLE_PRECISION,
    MPI_CHARACTER,
    MPI_REAL4,
    MPI_REAL8,
    MPI_REAL16,
    MPI_COMPLEX8,
    MPI_COMPLEX16,
    MPI_COMPLEX32,
    MPI_INTEGER1,
    MPI_INTEGER2,
    MPI_INTEGER4,
    MPI_INTEGER8,
    MPI_INT8_T,
    MPI_INT16_T,
    MPI_INT32_T,
    MPI_INT64_T,
    MPI_UINT8_T,
    MPI_UINT16_T,
    MPI_UINT32_T,
    MPI_UINT64_T,
    MPI_C_BOOL,
    MPI_C_FLOAT_COMPLEX,
    MPI_C_DOUBLE_COMPLEX,
    MPI_C_LONG_DOUBLE_COMPLEX,
    MPIX_C_FLOAT16,
    MPI_AINT,
    MPI_OFFSET,
    MPI_COUNT,
    MPI_CXX_BOOL,
    MPI_CXX_FLOAT_COMPLEX,
    MPI_CXX_DOUBLE_COMPLEX,
    MPI_CXX_LONG_DOUBLE_COMPLEX,
];

/// The layout of a predefined datatype, or MPI_ERR_TYPE.
pub fn layout(dt: MPI_Datatype) -> MpiResult<Layout> {
    match dt {
        MPI_FLOAT_INT => Ok(FLOAT_INT),
        MPI_DOUBLE_INT => Ok(DOUBLE_INT),
        MPI_LONG_INT => Ok(LONG_INT),
        MPI_SHORT_INT => Ok(SHORT_INT),
        MPI_LONG_DOUBLE_INT => Ok(LONG_DOUBLE_INT),
        MPI_DATATYPE_NULL => err(MPI_ERR_TYPE, "invalid datatype argument (MPI_DATATYPE_NULL)"),
        _ if BUILTIN.contains(&dt) => Ok(Layout::contiguous(((dt as u32 >> 8) & 0xff) as usize)),
        _ => err(MPI_ERR_TYPE, format!("invalid datatype argument (0x{:08x})", dt as u32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_sizes_come_from_the_handle() {
        assert_eq!(layout(MPI_INT).unwrap().size, 4);
        assert_eq!(layout(MPI_C_LONG_DOUBLE_COMPLEX).unwrap().size, 32);
        assert_eq!(layout(MPI_LB).unwrap().size, 0);
        assert!(layout(MPI_DATATYPE_NULL).is_err());
        assert!(layout(0x4c0004ff).is_err());
    }

    #[test]
    fn pair_types_have_padding() {
        let l = layout(MPI_SHORT_INT).unwrap();
        let mut blocks = vec![];
        l.for_each_block(2, |o, n| blocks.push((o, n)));
        assert_eq!(blocks, vec![(0, 2), (4, 4), (8, 2), (12, 4)]);
        assert_eq!(l.span(2), 16);
        assert_eq!(layout(MPI_DOUBLE_INT).unwrap().span(3), 44);
    }
}
