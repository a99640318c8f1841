//! File views (MPI-4.1 section 14.3): a displacement, an elementary type and a filetype
//! tiled from the displacement on. A view is the filetype's flattened form (the datatype
//! engine's `Layout`, the same one messages use), so the data of an access, a range of
//! bytes of the view's data stream, becomes a list of (file offset, length) runs.

use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::datatype::flat::Blocks;
use crate::datatype::{self, Layout, Type};
use crate::error::{MpiResult, err};

/// The data representations a view may name. Only `native` (and `internal`, which this
/// library stores as `native`) are implemented.
fn check_datarep(datarep: &str) -> MpiResult<()> {
    match datarep {
        "native" | "internal" => Ok(()),
        "external32" => err(
            MPI_ERR_UNSUPPORTED_DATAREP,
            "data representation external32 is not implemented yet in oxmpi (use native)",
        ),
        other => err(MPI_ERR_UNSUPPORTED_DATAREP, format!("unknown data representation \"{other}\"")),
    }
}

/// A file view.
#[derive(Clone)]
pub struct View {
    /// Absolute byte offset where the first filetype tile starts.
    pub disp: u64,
    /// The types as the program gave them, held so their handles can be handed back by
    /// MPI_File_get_view even after the program freed its own.
    pub etype: Type,
    pub filetype: Type,
    pub etype_size: usize,
    /// The filetype's flattened layout.
    filetype_layout: Layout,
    /// `Some(at)` when the filetype's tiles form one contiguous run starting `at` bytes
    /// after the displacement (the default view, a contiguous filetype).
    contiguous_at: Option<u64>,
    /// The filetype's data bounds from a tile's origin: [true_lb, true_ub).
    data_bounds: (u64, u64),
    pub datarep: String,
}

impl View {
    /// The view of a newly opened file: bytes from offset 0, "native".
    pub fn bytes() -> View {
        View::new(0, MPI_BYTE, MPI_BYTE, "native").expect("the default view is valid")
    }

    /// Checks the arguments of MPI_File_set_view (but the displacement, which the caller
    /// resolved) and makes the view.
    pub fn new(disp: u64, etype: MPI_Datatype, filetype: MPI_Datatype, datarep: &str) -> MpiResult<View> {
        let etype_layout = datatype::layout(etype)?;
        let filetype_layout = datatype::layout(filetype)?;
        check_datarep(datarep)?;
        let (etype_obj, filetype_obj) = (datatype::lookup(etype)?, datatype::lookup(filetype)?);
        if etype_layout.size == 0 {
            return err(MPI_ERR_ARG, "the etype holds no data");
        }
        let ft = filetype_obj.data().into_owned();
        if ft.size == 0 {
            return err(MPI_ERR_ARG, "the filetype holds no data");
        }
        if !ft.size.is_multiple_of(etype_layout.size) {
            return err(
                MPI_ERR_ARG,
                format!(
                    "the filetype ({} bytes of data) is not made of whole etypes ({} bytes)",
                    ft.size, etype_layout.size
                ),
            );
        }
        if ft.true_lb < 0 {
            return err(MPI_ERR_ARG, "the filetype has a negative displacement (MPI requires them non-negative)");
        }
        if ft.true_ub - ft.true_lb > ft.extent() {
            return err(MPI_ERR_ARG, "consecutive filetypes overlap: the filetype's data spans more than its extent");
        }
        // Displacements must not decrease, and data may not overlap within a tile.
        let mut end = 0isize;
        let mut ordered = true;
        filetype_layout.walk(
            1,
            0..ft.size,
            &mut Blocks(|off, len| {
                ordered &= off >= end;
                end = off + len as isize;
            }),
        );
        if !ordered {
            return err(
                MPI_ERR_ARG,
                "the filetype's displacements decrease or its blocks overlap (MPI requires them non-decreasing)",
            );
        }
        let contiguous_at = filetype_layout.contiguous_at().map(|at| at as u64);
        Ok(View {
            disp,
            etype: etype_obj,
            filetype: filetype_obj,
            etype_size: etype_layout.size,
            filetype_layout,
            contiguous_at,
            data_bounds: (ft.true_lb as u64, ft.true_ub as u64),
            datarep: datarep.to_string(),
        })
    }

    /// The (file offset, length) runs holding bytes `start..start + len` of the view's data
    /// stream, in order, adjacent runs merged.
    pub fn runs(&self, start: u64, len: usize) -> Vec<(u64, usize)> {
        if len == 0 {
            return Vec::new();
        }
        if let Some(at) = self.contiguous_at {
            return vec![(self.disp + at + start, len)];
        }
        let ft = &self.filetype_layout;
        let size = ft.size as u64;
        let first = start / size;
        let tiles = (start + len as u64).div_ceil(size) - first;
        let base = self.disp + first * ft.extent as u64;
        let skip = (start - first * size) as usize;
        let mut runs: Vec<(u64, usize)> = Vec::new();
        ft.walk(
            tiles as usize,
            skip..skip + len,
            &mut Blocks(|off, n| {
                // Offsets are non-negative: set_view rejected negative displacements.
                let at = base + off as u64;
                match runs.last_mut() {
                    Some((o, l)) if *o + *l as u64 == at => *l += n,
                    _ => runs.push((at, n)),
                }
            }),
        );
        runs
    }

    /// The absolute byte offset of view offset `offset` (in etypes): MPI_File_get_byte_offset.
    pub fn byte_offset(&self, offset: u64) -> u64 {
        self.runs(offset * self.etype_size as u64, 1)[0].0
    }

    /// Data bytes of the view that lie before absolute file offset `file_end`.
    pub fn data_before(&self, file_end: u64) -> u64 {
        if file_end <= self.disp {
            return 0;
        }
        let rel = file_end - self.disp;
        if let Some(at) = self.contiguous_at {
            return rel.saturating_sub(at);
        }
        let ft = &self.filetype_layout;
        let (ext, (lo, hi)) = (ft.extent as u64, self.data_bounds);
        // Tiles whose data ends by `rel` count whole; the next ones (a tile spans at most
        // one extent) in part.
        let whole = if rel >= hi { (rel - hi) / ext + 1 } else { 0 };
        let mut data = whole * ft.size as u64;
        let mut tile = whole;
        while tile * ext + lo < rel {
            let origin = (tile * ext) as isize;
            ft.walk(
                1,
                0..ft.size,
                &mut Blocks(|off, n| {
                    data += (rel as isize - origin - off).clamp(0, n as isize) as u64;
                }),
            );
            tile += 1;
        }
        data
    }

    /// The offset, in etypes, of the end of a file of `file_size` bytes in this view (the
    /// first etype not wholly before it): MPI_SEEK_END's origin.
    pub fn end_offset(&self, file_size: u64) -> u64 {
        self.data_before(file_size).div_ceil(self.etype_size as u64)
    }

    /// A handle to a type of the view for the program (MPI_File_get_view).
    pub fn handle_of(t: &Type) -> MPI_Datatype {
        datatype::user_handle(t)
    }
}
