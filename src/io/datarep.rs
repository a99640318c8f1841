//! Data representations (MPI-4.1 section 14.5): `native` and `internal` (stored as native),
//! `external32`, and the representations the program registers with MPI_Register_datarep.
//!
//! A representation may store a basic type in another size than memory (external32's
//! MPI_LONG in 4 bytes, or what a user extent function says). The view is then laid out in
//! the file's sizes (`Repr::in_file`) and an access's data takes its memory type's signature
//! summed in them (`Conversion::file_len`). An access converts its whole data stream in one
//! step: the program's conversion function is called once per access, with position 0 and
//! the access's data items.

use super::access::{Direction, Memory};
use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::datatype::builtin::{self, Builtin};
use crate::datatype::sig::{Sig, convert};
use crate::datatype::{self, Type};
use crate::error::{MpiError, MpiResult, err};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The functions of a data representation registered by the program (MPI_Register_datarep);
/// the ABI layer implements it over the program's C functions.
pub trait UserDatarep: Send + Sync {
    /// The bytes basic type `dt` takes in the file (`dtype_file_extent_fn`).
    fn file_extent(&self, dt: MPI_Datatype) -> MpiResult<usize>;

    /// Whether data moving in `dir` is converted (false for MPI_CONVERSION_FN_NULL: the file
    /// holds it as in memory).
    fn converts(&self, dir: Direction) -> bool;

    /// `read_conversion_fn`: stores the `items` data items of `file` (file representation,
    /// one after the other) into the program's memory at `user`, laid out as `datatype`
    /// tiled from there.
    ///
    /// # Safety
    /// `user` is the program's memory, writable for those items.
    unsafe fn read(&self, user: usize, datatype: MPI_Datatype, items: usize, file: &[u8]) -> MpiResult<()>;

    /// `write_conversion_fn`: the inverse, from the program's memory into `file`.
    ///
    /// # Safety
    /// `user` is the program's memory, readable for those items.
    unsafe fn write(&self, user: usize, datatype: MPI_Datatype, items: usize, file: &mut [u8]) -> MpiResult<()>;
}

/// The representation a view stores its data in.
#[derive(Clone)]
pub enum Repr {
    Native,
    External32,
    User(Arc<dyn UserDatarep>),
}

static REGISTERED: Mutex<BTreeMap<String, Arc<dyn UserDatarep>>> = Mutex::new(BTreeMap::new());

fn registered() -> MutexGuard<'static, BTreeMap<String, Arc<dyn UserDatarep>>> {
    REGISTERED.lock().unwrap_or_else(|p| p.into_inner())
}

/// MPI_Register_datarep: MPI_ERR_DUP_DATAREP for a name in use.
pub fn register(name: &str, rep: Arc<dyn UserDatarep>) -> MpiResult<()> {
    if name.is_empty() || name.len() >= MPI_MAX_DATAREP_STRING as usize {
        return err(MPI_ERR_ARG, format!("invalid data representation name \"{name}\""));
    }
    let mut reps = registered();
    if matches!(name, "native" | "internal" | "external32") || reps.contains_key(name) {
        return err(MPI_ERR_DUP_DATAREP, format!("the data representation \"{name}\" is already defined"));
    }
    reps.insert(name.to_string(), rep);
    Ok(())
}

/// Checks that `rep` (named `name`) stores every basic type of `sig` in its native size:
/// what a representation without conversion functions needs, since its data is copied.
fn check_file_sizes(rep: &dyn UserDatarep, name: &str, sig: &Sig, what: &str) -> MpiResult<()> {
    for b in sig.basic_types() {
        let extent = rep.file_extent(b.handle)?;
        if extent != b.size {
            return err(
                MPI_ERR_UNSUPPORTED_DATAREP,
                format!(
                    "{what}: the data representation \"{name}\" has no conversion functions but stores {} in \
                     {extent} bytes where it has {} in memory",
                    b.name, b.size
                ),
            );
        }
    }
    Ok(())
}

/// The bytes each basic type of a signature takes in the file.
pub struct FileSizes(Vec<(MPI_Datatype, usize)>);

impl FileSizes {
    fn of(&self, b: &Builtin) -> usize {
        self.0.iter().find(|&&(h, _)| h == b.handle).map_or(b.size, |&(_, n)| n)
    }
}

impl Repr {
    /// The representation named `name`.
    pub fn named(name: &str) -> MpiResult<Repr> {
        match name {
            "native" | "internal" => return Ok(Repr::Native),
            "external32" => return Ok(Repr::External32),
            _ => {}
        }
        // Not held while the program's function runs.
        let rep = registered().get(name).cloned();
        rep.map(Repr::User).ok_or_else(|| {
            MpiError::new(MPI_ERR_UNSUPPORTED_DATAREP, format!("unknown data representation \"{name}\""))
        })
    }

    /// The bytes each basic type of `sig` takes in the file.
    pub fn file_sizes(&self, sig: &Sig) -> MpiResult<FileSizes> {
        let sizes = sig.basic_types().into_iter().map(|b| {
            let n = match self {
                Repr::Native => b.size,
                Repr::External32 => builtin::ext32_size(b),
                Repr::User(rep) => rep.file_extent(b.handle)?,
            };
            Ok((b.handle, n))
        });
        Ok(FileSizes(sizes.collect::<MpiResult<_>>()?))
    }

    /// `t` as laid out in the file, when that differs from memory: each predefined type whose
    /// data takes another size in the file replaced by that many bytes, element displacements
    /// scaled and byte displacements kept (MPI-4.1 section 14.5.1). A committed handle the
    /// caller frees; None when the file holds `t` as memory does.
    pub fn in_file(&self, t: &Type) -> MpiResult<Option<MPI_Datatype>> {
        if matches!(self, Repr::Native) {
            return Ok(None);
        }
        datatype::rebuild_leaves(t, &mut |leaf| {
            let d = leaf.data();
            let sizes = self.file_sizes(&d.sig)?;
            let in_file = d.sig.size_by(&|b| sizes.of(b));
            if in_file == d.size {
                return Ok(None);
            }
            let bytes = datatype::contiguous(in_file as i64, MPI_BYTE, false)?;
            datatype::commit(bytes)?;
            Ok(Some(bytes))
        })
    }

    /// How an access of `mem` in direction `dir` converts its data (None: it moves as it is),
    /// after checking the memory type against the representation.
    pub fn conversion(&self, name: &str, mem: &Memory, dir: Direction) -> MpiResult<Option<Conversion>> {
        let how = match self {
            Repr::Native => return Ok(None),
            Repr::External32 => How::External32,
            Repr::User(rep) if !rep.converts(dir) => {
                check_file_sizes(&**rep, name, &datatype::lookup(mem.datatype)?.data().sig, "the memory type")?;
                return Ok(None);
            }
            Repr::User(rep) => How::User(rep.clone()),
        };
        let sig = datatype::lookup(mem.datatype)?.data().sig.clone();
        let sizes = self.file_sizes(&sig)?;
        let item = sig.size_by(&|b| sizes.of(b));
        Ok(Some(Conversion { how, sig, sizes, item, count: mem.count }))
    }

    /// Bytes of the file an access of `mem` covers.
    pub fn stream_len(&self, mem: &Memory) -> MpiResult<usize> {
        if matches!(self, Repr::Native) {
            return Ok(mem.bytes());
        }
        let sig = datatype::lookup(mem.datatype)?.data().sig.clone();
        let sizes = self.file_sizes(&sig)?;
        Ok(mem.count * sig.size_by(&|b| sizes.of(b)))
    }

    /// MPI_File_get_type_extent of `dt` in this representation.
    pub fn type_extent(&self, dt: MPI_Datatype) -> MpiResult<i64> {
        let t = datatype::lookup(dt)?;
        let Some(h) = self.in_file(&t)? else {
            return Ok(t.data().extent() as i64);
        };
        let extent = datatype::lookup(h).map(|f| f.data().extent() as i64);
        datatype::free(h)?;
        extent
    }
}

enum How {
    External32,
    User(Arc<dyn UserDatarep>),
}

/// The conversion of one access's data stream: `count` items of the memory type, whose
/// signature is `sig`, each `item` bytes in the file.
pub struct Conversion {
    how: How,
    sig: Arc<Sig>,
    sizes: FileSizes,
    item: usize,
    count: usize,
}

impl Conversion {
    /// Whether the program's functions convert the data (a user representation).
    pub fn by_program(&self) -> bool {
        matches!(self.how, How::User(_))
    }

    /// Bytes of the access's data in the file.
    pub fn file_len(&self) -> usize {
        self.count * self.item
    }

    /// The bytes in memory of the whole basic elements among the first `n` bytes of the
    /// access's data in the file, and how many they are.
    fn in_memory(&self, n: usize) -> (usize, usize) {
        if self.item == 0 {
            return (0, 0);
        }
        let (elems, bytes) = self.sig.prefix_by(n % self.item, &|b| self.sizes.of(b));
        (n / self.item * self.sig.size + bytes, n / self.item * self.sig.elems + elems)
    }

    /// What the program's memory holds of the first `n` bytes of the data in the file (the
    /// length a status reports).
    pub fn memory_bytes(&self, n: usize) -> usize {
        self.in_memory(n).0
    }

    /// The data of a write as the file stores it: the program's memory packed and converted.
    ///
    /// # Safety
    /// `mem` describes memory of the program readable for its `count` elements.
    pub unsafe fn to_file(&self, mem: &Memory) -> MpiResult<Vec<u8>> {
        let mut file = vec![0u8; self.file_len()];
        match &self.how {
            How::External32 => {
                // SAFETY: the caller's contract on `mem`.
                let mut native = unsafe { mem.layout.pack_to_vec(mem.addr as *const u8, mem.count, 0..mem.bytes()) };
                convert(&self.sig, mem.count, &mut native, &mut file, true);
            }
            // SAFETY: the caller's contract on `mem`.
            How::User(rep) => unsafe { rep.write(mem.addr, mem.datatype, mem.count * self.sig.elems, &mut file) }?,
        }
        Ok(file)
    }

    /// After a read of the first `n` bytes of `file` (the access's data as the file stores
    /// it, `file_len` bytes): stores the whole data items read into the program's memory.
    ///
    /// # Safety
    /// `mem` describes memory of the program writable for its `count` elements.
    pub unsafe fn from_file(&self, mem: &Memory, file: &mut [u8], n: usize) -> MpiResult<()> {
        let (bytes, items) = self.in_memory(n);
        match &self.how {
            How::External32 => {
                let mut native = vec![0u8; mem.bytes()];
                convert(&self.sig, mem.count, &mut native, file, false);
                // SAFETY: the caller's contract on `mem`; only the elements read are stored.
                unsafe { mem.layout.unpack(mem.addr as *mut u8, mem.count, 0, &native[..bytes]) };
                Ok(())
            }
            // SAFETY: the caller's contract on `mem`.
            How::User(rep) => unsafe { rep.read(mem.addr, mem.datatype, items, &file[..n]) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A representation that stores every byte complemented; MPI_INT takes `int_extent`
    /// bytes in the file.
    struct Complement {
        int_extent: usize,
    }

    impl UserDatarep for Complement {
        fn file_extent(&self, dt: MPI_Datatype) -> MpiResult<usize> {
            Ok(if dt == MPI_INT { self.int_extent } else { datatype::builtin::builtin(dt).unwrap().size })
        }
        fn converts(&self, _dir: Direction) -> bool {
            true
        }
        unsafe fn read(&self, user: usize, _dt: MPI_Datatype, items: usize, file: &[u8]) -> MpiResult<()> {
            for (k, b) in file[..items * 4].iter().enumerate() {
                // SAFETY: the test's buffer holds `items` ints.
                unsafe { *(user as *mut u8).add(k) = !b };
            }
            Ok(())
        }
        unsafe fn write(&self, user: usize, _dt: MPI_Datatype, items: usize, file: &mut [u8]) -> MpiResult<()> {
            for (k, b) in file[..items * 4].iter_mut().enumerate() {
                // SAFETY: as above.
                *b = !unsafe { *(user as *const u8).add(k) };
            }
            Ok(())
        }
    }

    #[test]
    fn user_representations_convert_whole_items_in_their_file_sizes() {
        register("datarep-test-complement", Arc::new(Complement { int_extent: 4 })).unwrap();
        register("datarep-test-wide", Arc::new(Complement { int_extent: 8 })).unwrap();
        let dup = register("datarep-test-complement", Arc::new(Complement { int_extent: 4 }));
        assert_eq!(dup.unwrap_err().code, MPI_ERR_DUP_DATAREP);
        assert_eq!(
            register("external32", Arc::new(Complement { int_extent: 4 })).unwrap_err().code,
            MPI_ERR_DUP_DATAREP
        );
        let repr = Repr::named("datarep-test-complement").unwrap();
        let wide = Repr::named("datarep-test-wide").unwrap();
        assert_eq!(repr.type_extent(MPI_INT).unwrap(), 4);
        assert_eq!(wide.type_extent(MPI_INT).unwrap(), 8);
        // A vector's stride counts in its elements' extent in the file; an hvector's in bytes.
        let vector = datatype::vector(2, 1, 3, MPI_INT, false).unwrap();
        let hvector = datatype::hvector(2, 1, 12, MPI_INT, false).unwrap();
        assert_eq!(wide.type_extent(vector).unwrap(), 8 * 4);
        assert_eq!(wide.type_extent(hvector).unwrap(), 12 + 8);
        datatype::free(vector).unwrap();
        datatype::free(hvector).unwrap();
        let unknown = Repr::named("datarep-test-none");
        assert_eq!(unknown.err().unwrap().code, MPI_ERR_UNSUPPORTED_DATAREP);

        let values: [i32; 3] = [1, -2, 0x01020304];
        let mem = Memory {
            addr: values.as_ptr() as usize,
            count: 3,
            datatype: MPI_INT,
            layout: datatype::layout(MPI_INT).unwrap(),
        };
        let conv = repr.conversion("datarep-test-complement", &mem, Direction::Write).unwrap().unwrap();
        // SAFETY: `values` holds the 3 ints.
        let mut file = unsafe { conv.to_file(&mem) }.unwrap();
        let native: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(file, native.iter().map(|b| !b).collect::<Vec<u8>>());
        // A read that met the end of the file after 9 bytes stores 2 whole ints.
        let mut back = [7i32; 3];
        let out = Memory { addr: back.as_mut_ptr() as usize, ..mem };
        // SAFETY: `back` holds the 3 ints.
        unsafe { conv.from_file(&out, &mut file, 9) }.unwrap();
        assert_eq!(back, [1, -2, 7]);
        assert_eq!(conv.memory_bytes(9), 8);
        let wide_conv = wide.conversion("datarep-test-wide", &out, Direction::Write).unwrap().unwrap();
        assert_eq!((wide_conv.file_len(), wide_conv.memory_bytes(17)), (24, 8));
    }

    #[test]
    fn external32_converts_sizes_that_differ() {
        let values: [i64; 3] = [1, -2, 0x0102_0304];
        let mem = Memory {
            addr: values.as_ptr() as usize,
            count: 3,
            datatype: MPI_LONG,
            layout: datatype::layout(MPI_LONG).unwrap(),
        };
        let conv = Repr::External32.conversion("external32", &mem, Direction::Write).unwrap().unwrap();
        assert_eq!(conv.file_len(), 12);
        // SAFETY: `values` holds the 3 longs.
        let mut file = unsafe { conv.to_file(&mem) }.unwrap();
        assert_eq!(file, [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4]);
        let mut back = [7i64; 3];
        let out = Memory { addr: back.as_mut_ptr() as usize, ..mem };
        // SAFETY: `back` holds the 3 longs; 10 bytes read hold 2 whole ones.
        unsafe { conv.from_file(&out, &mut file, 10) }.unwrap();
        assert_eq!(back, [1, -2, 7]);
        assert_eq!(conv.memory_bytes(10), 16);
        assert_eq!(Repr::External32.type_extent(MPI_LONG).unwrap(), 4);
        assert_eq!(Repr::External32.type_extent(MPI_INT).unwrap(), 4);
    }
}
