//! Reduction operations: the predefined ones (MPI_MAX ... MPI_NO_OP) with a kernel per
//! datatype, and user operations registered by MPI_Op_create.
//!
//! Kernels work on packed element bytes (the datatype's data without its padding), which is
//! what collectives move; user functions get the datatype's memory layout, as C expects.
//! Every kernel computes `inout[i] = in[i] op inout[i]`, the order MPI gives user functions,
//! so a caller that passes the lower-ranked operand as `in` respects non-commutative ops.

mod kernels;

pub(crate) use kernels::{Elem, compares_and_swaps, scalar_elem};

use crate::abi::consts::*;
use crate::abi::types::{MPI_Datatype, MPI_Op};
use crate::datatype::{self, Layout};
use crate::error::{MpiResult, err};
use std::sync::{Arc, Mutex};

/// The predefined operations, in handle order (MPI_MAX = 0x58000001 ... MPI_NO_OP = 0x5800000e).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
    Replace,
    NoOp,
}

const BUILTINS: [Builtin; 14] = [
    Builtin::Max,
    Builtin::Min,
    Builtin::Sum,
    Builtin::Prod,
    Builtin::Land,
    Builtin::Band,
    Builtin::Lor,
    Builtin::Bor,
    Builtin::Lxor,
    Builtin::Bxor,
    Builtin::Minloc,
    Builtin::Maxloc,
    Builtin::Replace,
    Builtin::NoOp,
];

impl Builtin {
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Max => "MPI_MAX",
            Builtin::Min => "MPI_MIN",
            Builtin::Sum => "MPI_SUM",
            Builtin::Prod => "MPI_PROD",
            Builtin::Land => "MPI_LAND",
            Builtin::Band => "MPI_BAND",
            Builtin::Lor => "MPI_LOR",
            Builtin::Bor => "MPI_BOR",
            Builtin::Lxor => "MPI_LXOR",
            Builtin::Bxor => "MPI_BXOR",
            Builtin::Minloc => "MPI_MINLOC",
            Builtin::Maxloc => "MPI_MAXLOC",
            Builtin::Replace => "MPI_REPLACE",
            Builtin::NoOp => "MPI_NO_OP",
        }
    }
}

/// A user function over memory-layout bytes: `(in, inout, elements, datatype)`. Built at the
/// ABI edge around the C callback.
pub type UserFn = dyn Fn(&[u8], &mut [u8], Elements, MPI_Datatype) + Send + Sync;

/// Where the elements handed to a user function lie in its two buffers: element `i`'s origin
/// (the address its datatype's displacements count from) is `origin + i * extent` bytes from
/// the buffers' start. `origin` is not 0 when the datatype's lowest byte is not its origin
/// (a lower bound other than 0, a negative stride): C code adds the displacements to the
/// pointer it gets, so it must get the origin, not the lowest byte.
#[derive(Clone, Copy, Debug)]
pub struct Elements {
    pub count: usize,
    pub origin: isize,
    pub extent: usize,
}

pub struct UserOp {
    pub func: Box<UserFn>,
    pub commutative: bool,
}

/// An operation handle resolved to what it does.
#[derive(Clone)]
pub enum Op {
    Builtin(Builtin),
    User(Arc<UserOp>),
}

/// User op handles: kind DIRECT (bits 31..30 = 10), object OP (0x6), table index below.
const DIRECT_OP: u32 = 0x9800_0000;
const BUILTIN_OP: u32 = 0x5800_0000;

/// User operations by index; guarded by a lock because MPI_Op_create may run before MPI_Init.
static USER_OPS: Mutex<Vec<Option<Arc<UserOp>>>> = Mutex::new(Vec::new());

fn user_table() -> std::sync::MutexGuard<'static, Vec<Option<Arc<UserOp>>>> {
    USER_OPS.lock().unwrap_or_else(|p| p.into_inner())
}

fn invalid_op(op: MPI_Op) -> crate::error::MpiError {
    if op == MPI_OP_NULL {
        crate::error::MpiError::new(MPI_ERR_OP, "invalid operation argument (MPI_OP_NULL)")
    } else {
        crate::error::MpiError::new(MPI_ERR_OP, format!("invalid operation argument (0x{:08x})", op as u32))
    }
}

impl Op {
    /// The operation behind a handle, or MPI_ERR_OP.
    pub fn from_handle(op: MPI_Op) -> MpiResult<Op> {
        let h = op as u32;
        if h & 0xffff_ff00 == BUILTIN_OP && (1..=14).contains(&(h & 0xff)) {
            return Ok(Op::Builtin(BUILTINS[(h & 0xff) as usize - 1]));
        }
        if h & 0xfc00_0000 == DIRECT_OP {
            let idx = (h & 0x03ff_ffff) as usize;
            if let Some(Some(u)) = user_table().get(idx) {
                return Ok(Op::User(u.clone()));
            }
        }
        Err(invalid_op(op))
    }

    pub fn is_commutative(&self) -> bool {
        match self {
            Op::Builtin(_) => true,
            Op::User(u) => u.commutative,
        }
    }
}

/// MPI_Op_create: registers a user operation and returns its handle.
pub fn create(func: Box<UserFn>, commutative: bool) -> MPI_Op {
    let mut t = user_table();
    let op = Some(Arc::new(UserOp { func, commutative }));
    let idx = match t.iter().position(|o| o.is_none()) {
        Some(i) => {
            t[i] = op;
            i
        }
        None => {
            t.push(op);
            t.len() - 1
        }
    };
    (DIRECT_OP | idx as u32) as MPI_Op
}

/// MPI_Op_free of a user operation (predefined ones cannot be freed).
pub fn free(op: MPI_Op) -> MpiResult<()> {
    match Op::from_handle(op)? {
        Op::Builtin(b) => err(MPI_ERR_OP, format!("cannot free the predefined operation {}", b.name())),
        Op::User(_) => {
            user_table()[(op as u32 & 0x03ff_ffff) as usize] = None;
            Ok(())
        }
    }
}

/// An operation bound to a datatype: checked once, then applied to packed element bytes.
#[derive(Clone)]
pub struct Reduction {
    op: Op,
    datatype: MPI_Datatype,
    layout: Layout,
    kernel: Option<kernels::Kernel>,
}

impl Reduction {
    /// Checks that `op` may be applied to `datatype` (MPI_ERR_OP otherwise).
    pub fn new(op: &Op, datatype: MPI_Datatype) -> MpiResult<Reduction> {
        Reduction::with_layout(op, datatype, datatype::layout(datatype)?)
    }

    /// As `new`, with the datatype's layout already looked up (`datatype::layout`).
    pub fn with_layout(op: &Op, datatype: MPI_Datatype, layout: Layout) -> MpiResult<Reduction> {
        let kernel = match op {
            Op::Builtin(b) => Some(kernels::kernel(*b, datatype)?),
            Op::User(_) => None,
        };
        Ok(Reduction { op: op.clone(), datatype, layout, kernel })
    }

    /// `with_layout` from the handles: `layout` is `datatype`'s, looked up by the caller.
    /// Programs reduce the same predefined operation and datatype call after call: the last
    /// such pair this thread bound is kept with its kernel (predefined handles never change
    /// meaning, so the entry cannot go stale), sparing the operation and kernel lookups.
    #[inline]
    pub fn from_handles(op: MPI_Op, datatype: MPI_Datatype, layout: &Layout) -> MpiResult<Reduction> {
        thread_local! {
            static LAST_PREDEFINED: std::cell::Cell<Option<(MPI_Op, MPI_Datatype, Builtin, kernels::Kernel)>> =
                const { std::cell::Cell::new(None) };
        }
        if let Some((o, d, b, k)) = LAST_PREDEFINED.get()
            && o == op
            && d == datatype
        {
            return Ok(Reduction { op: Op::Builtin(b), datatype, layout: layout.clone(), kernel: Some(k) });
        }
        let r = Reduction::with_layout(&Op::from_handle(op)?, datatype, layout.clone())?;
        if let (Op::Builtin(b), Some(k)) = (&r.op, r.kernel)
            && crate::datatype::builtin::builtin(datatype).is_some()
        {
            LAST_PREDEFINED.set(Some((op, datatype, *b, k)));
        }
        Ok(r)
    }

    pub fn is_commutative(&self) -> bool {
        self.op.is_commutative()
    }

    /// The predefined operation, if it is one (sparse reductions need its neutral element).
    pub fn builtin(&self) -> Option<Builtin> {
        match self.op {
            Op::Builtin(b) => Some(b),
            Op::User(_) => None,
        }
    }

    pub fn datatype(&self) -> MPI_Datatype {
        self.datatype
    }

    /// Whether a predefined operation (element by element, so a vector may be split
    /// anywhere between elements; user functions may assume more).
    pub fn is_builtin(&self) -> bool {
        self.kernel.is_some()
    }

    /// The datatype's layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Bytes of one packed element.
    pub fn elem_size(&self) -> usize {
        self.layout.size
    }

    /// The order of a fold of `n` operands into one accumulator: the operand that seeds it,
    /// then those combined in, each as `apply`'s `input` (the lower operand). Commutative
    /// operations go left to right, `((a0 op a1) op a2) op ...`, the grouping of a loop over
    /// the ranks; others right to left, `a0 op (a1 op (... op a(n-1)))`, which keeps rank
    /// order. Every fold of one collective uses this, so the grouping (which changes rounded
    /// floating-point results) does not depend on the path taken.
    pub fn fold_order(&self, n: usize) -> (usize, impl Iterator<Item = usize> + use<>) {
        let left = self.is_commutative();
        let seed = if left { 0 } else { n.saturating_sub(1) };
        (seed, (0..n.saturating_sub(1)).map(move |i| if left { i + 1 } else { n - 2 - i }))
    }

    /// `inout = input op inout`, element by element, on packed bytes of equal length.
    pub fn apply(&self, input: &[u8], inout: &mut [u8]) {
        debug_assert_eq!(input.len(), inout.len());
        let n = inout.len().min(input.len());
        let (input, inout) = (&input[..n], &mut inout[..n]);
        if let Some(k) = self.kernel {
            return k(input, inout);
        }
        let Op::User(u) = &self.op else { unreachable!("builtin ops always have a kernel") };
        let size = self.layout.size;
        if size == 0 {
            return;
        }
        let count = n / size;
        if self.layout.is_contiguous() {
            (u.func)(input, inout, Elements { count, origin: 0, extent: size }, self.datatype);
        } else {
            // The user function sees C's memory layout: spread the packed bytes out, then
            // gather the result back. `unpack` puts the lowest data byte at the start.
            let a = unpack(&self.layout, count, input);
            let mut b = unpack(&self.layout, count, inout);
            let elements = Elements { count, origin: -self.layout.lower(count), extent: self.layout.extent };
            (u.func)(&a, &mut b, elements, self.datatype);
            pack_into(&self.layout, count, &b, inout);
        }
    }
}

/// The packed bytes of `count` elements of `layout` stored at `mem`.
pub fn pack(layout: &Layout, count: usize, mem: &[u8]) -> Vec<u8> {
    // Filled block by block, not zeroed first: a contiguous vector costs one copy.
    let mut out = Vec::with_capacity(layout.size * count);
    layout.for_each_block(count, |off, n| out.extend_from_slice(&mem[off..off + n]));
    out
}

/// Packs `count` elements from `mem` into `out` (of at least `count * size` bytes).
pub fn pack_into(layout: &Layout, count: usize, mem: &[u8], out: &mut [u8]) {
    let mut pos = 0;
    layout.for_each_block(count, |off, n| {
        out[pos..pos + n].copy_from_slice(&mem[off..off + n]);
        pos += n;
    });
}

/// Spreads packed bytes of `count` elements into a fresh memory-layout buffer of `count`
/// whole extents (padding zero), so C code may touch the last element's padding too.
pub fn unpack(layout: &Layout, count: usize, packed: &[u8]) -> Vec<u8> {
    let mut mem = vec![0u8; layout.span(count).max(layout.extent * count)];
    unpack_into(layout, count, packed, &mut mem);
    mem
}

/// Writes packed bytes of up to `count` elements into `mem` (stops when `packed` runs out).
pub fn unpack_into(layout: &Layout, count: usize, packed: &[u8], mem: &mut [u8]) {
    let mut pos = 0;
    layout.for_each_block(count, |off, n| {
        let n = n.min(packed.len().saturating_sub(pos));
        mem[off..off + n].copy_from_slice(&packed[pos..pos + n]);
        pos += n;
    });
}

/// MPI_Reduce_local on memory-layout buffers: `inout = input op inout`.
pub fn reduce_local(red: &Reduction, count: usize, input: &[u8], inout: &mut [u8]) {
    let layout = &red.layout;
    if layout.is_contiguous() {
        let n = layout.size * count;
        red.apply(&input[..n], &mut inout[..n]);
    } else {
        let a = pack(layout, count, input);
        let mut b = pack(layout, count, inout);
        red.apply(&a, &mut b);
        unpack_into(layout, count, &b, inout);
    }
}

#[cfg(test)]
mod tests;
