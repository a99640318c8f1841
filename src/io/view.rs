//! File views (MPI-4.1 section 14.3): a displacement, an elementary type and a filetype
//! tiled from the displacement on. A view is the filetype's flattened form (the datatype
//! engine's `Layout`, the same one messages use), so the data of an access, a range of
//! bytes of the view's data stream, becomes a list of (file offset, length) runs.

use super::datarep::Repr;
use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::datatype::flat::Blocks;
use crate::datatype::{self, Layout, Type};
use crate::error::{MpiResult, err};

/// What MPI requires of the typemaps of a view's types (MPI-4.1 section 14.3): displacements
/// non-negative and non-decreasing; for a file that may be written, no byte twice (blocks
/// and consecutive tiles must not overlap). MPI_ERR_IO, as MPICH reports it.
fn check_typemap(layout: &Layout, data: &datatype::TypeData, what: &str, read_only: bool) -> MpiResult<()> {
    if data.true_lb < 0 {
        return err(MPI_ERR_IO, format!("the {what} has a negative displacement (MPI requires them non-negative)"));
    }
    let (mut last_start, mut last_end) = (0isize, 0isize);
    let (mut decreasing, mut overlapping) = (false, false);
    layout.walk(
        1,
        0..data.size,
        &mut Blocks(|off, len| {
            decreasing |= off < last_start;
            overlapping |= off < last_end;
            (last_start, last_end) = (off, off + len as isize);
        }),
    );
    if decreasing {
        return err(MPI_ERR_IO, format!("the {what}'s displacements decrease (MPI requires them non-decreasing)"));
    }
    overlapping |= data.true_ub - data.true_lb > data.extent();
    if overlapping && !read_only {
        return err(
            MPI_ERR_IO,
            format!("the {what} covers some bytes twice, which only a file opened MPI_MODE_RDONLY allows"),
        );
    }
    Ok(())
}

/// The layout and data of type `dt` in the file's representation `repr`.
fn in_file(repr: &Repr, dt: MPI_Datatype) -> MpiResult<(Layout, datatype::TypeData)> {
    let t = datatype::lookup(dt)?;
    let Some(h) = repr.in_file(&t)? else {
        return Ok((datatype::layout(dt)?, t.data().into_owned()));
    };
    let made = datatype::layout(h).and_then(|l| Ok((l, datatype::lookup(h)?.data().into_owned())));
    datatype::free(h)?;
    made
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
    /// The etype's bytes in the file, and the filetype's flattened layout in the file: with
    /// a representation that stores some types in another size than memory (MPI_LONG in 4
    /// bytes in external32), the types as the file lays them out (`Repr::in_file`). Offsets
    /// and lengths of the view's data stream are in the file's bytes.
    pub etype_size: usize,
    filetype_layout: Layout,
    /// `Some(at)` when the filetype's tiles form one contiguous run starting `at` bytes
    /// after the displacement (the default view, a contiguous filetype).
    contiguous_at: Option<u64>,
    /// The filetype's data bounds from a tile's origin: [true_lb, true_ub).
    data_bounds: (u64, u64),
    pub datarep: String,
    /// How the file stores the data (converted on each access unless native).
    pub repr: Repr,
}

impl View {
    /// The view of a newly opened file: bytes from offset 0, "native".
    pub fn bytes() -> View {
        View::new(0, MPI_BYTE, MPI_BYTE, "native", true).expect("the default view is valid")
    }

    /// Checks the arguments of MPI_File_set_view (but the displacement, which the caller
    /// resolved) and makes the view.
    pub fn new(
        disp: u64,
        etype: MPI_Datatype,
        filetype: MPI_Datatype,
        datarep: &str,
        read_only: bool,
    ) -> MpiResult<View> {
        // Checks that both are committed.
        datatype::layout(etype)?;
        datatype::layout(filetype)?;
        let (etype_obj, filetype_obj) = (datatype::lookup(etype)?, datatype::lookup(filetype)?);
        let repr = Repr::named(datarep)?;
        // The types as the file lays them out: the view counts in the file's bytes.
        let (etype_layout, et) = in_file(&repr, etype)?;
        let (filetype_layout, ft) = in_file(&repr, filetype)?;
        if etype_layout.size == 0 {
            return err(MPI_ERR_ARG, "the etype holds no data");
        }
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
        check_typemap(&etype_layout, &et, "etype", read_only)?;
        check_typemap(&filetype_layout, &ft, "filetype", read_only)?;
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
            repr,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(dt: MPI_Datatype) -> MPI_Datatype {
        datatype::commit(dt).unwrap();
        dt
    }

    #[test]
    fn a_vector_view_becomes_runs_of_the_file() {
        // Blocks of 2 ints at ints 0, 4, 8: 24 bytes of data, extent 40.
        let vector = committed(datatype::vector(3, 2, 4, MPI_INT, false).unwrap());
        let v = View::new(100, MPI_INT, vector, "native", false).unwrap();
        assert_eq!(v.runs(0, 24), vec![(100, 8), (116, 8), (132, 8)]);
        assert_eq!(v.runs(4, 8), vec![(104, 4), (116, 4)]);
        // The last block of a tile ends where the next tile starts: one run.
        assert_eq!(v.runs(20, 8), vec![(136, 8)]);
        assert_eq!(v.byte_offset(3), 120);
        assert_eq!(v.data_before(118), 10);
        assert_eq!(v.end_offset(118), 3);
        assert_eq!(v.data_before(50), 0);
        assert_eq!(v.data_before(100 + 40 + 4), 28);
        datatype::free(vector).unwrap();
    }

    #[test]
    fn an_external32_view_counts_in_the_file_sizes() {
        // MPI_LONG takes 4 bytes in external32: blocks of 2 at longs 0, 4, 8 (extent 12).
        let vector = committed(datatype::vector(3, 2, 4, MPI_LONG, false).unwrap());
        let v = View::new(100, MPI_LONG, vector, "external32", false).unwrap();
        assert_eq!(v.etype_size, 4);
        assert_eq!(v.runs(0, 24), vec![(100, 8), (116, 8), (132, 8)]);
        assert_eq!(v.byte_offset(3), 120);
        // A struct's byte displacements stay: a long at 0 and a double at 16.
        let s = committed(datatype::create_struct(&[1, 1], &[0, 16], &[MPI_LONG, MPI_DOUBLE], false).unwrap());
        let v = View::new(0, MPI_BYTE, s, "external32", false).unwrap();
        assert_eq!(v.runs(0, 24), vec![(0, 4), (16, 12), (40, 8)]);
        datatype::free(vector).unwrap();
        datatype::free(s).unwrap();
    }

    #[test]
    fn the_default_view_is_one_run() {
        let v = View::bytes();
        assert_eq!(v.runs(7, 1000), vec![(7, 1000)]);
        assert_eq!(v.end_offset(55), 55);
    }

    #[test]
    fn filetypes_the_standard_forbids_are_refused() {
        let negative = committed(datatype::hindexed(&[1, 1], &[-8, 0], MPI_INT, false).unwrap());
        let decreasing = committed(datatype::hindexed(&[1, 1], &[4, 0], MPI_INT, false).unwrap());
        let overlapping = committed(datatype::hindexed(&[2, 1], &[0, 4], MPI_INT, false).unwrap());
        let three = committed(datatype::contiguous(3, MPI_BYTE, false).unwrap());
        for ft in [negative, decreasing, overlapping] {
            assert_eq!(View::new(0, MPI_INT, ft, "native", false).err().unwrap().code, MPI_ERR_IO);
            assert_eq!(View::new(0, ft, ft, "native", false).err().unwrap().code, MPI_ERR_IO, "as an etype");
        }
        assert!(View::new(0, MPI_INT, overlapping, "native", true).is_ok(), "overlaps may be read");
        assert_eq!(View::new(0, MPI_INT, three, "native", false).err().unwrap().code, MPI_ERR_ARG);
        for ft in [negative, decreasing, overlapping, three] {
            datatype::free(ft).unwrap();
        }
        let uncommitted = datatype::contiguous(2, MPI_INT, false).unwrap();
        assert_eq!(View::new(0, MPI_INT, uncommitted, "native", false).err().unwrap().code, MPI_ERR_TYPE);
        datatype::free(uncommitted).unwrap();
        assert!(matches!(View::new(0, MPI_INT, MPI_INT, "external32", false).unwrap().repr, Repr::External32));
        let unknown = View::new(0, MPI_INT, MPI_INT, "other", false);
        assert_eq!(unknown.err().unwrap().code, MPI_ERR_UNSUPPORTED_DATAREP);
        assert!(View::new(0, MPI_INT, MPI_INT, "internal", false).is_ok());
    }
}
