//! Data representations (MPI-4.1 section 14.5): `native` and `internal` (stored as native),
//! `external32`, and the representations the program registers with MPI_Register_datarep.
//!
//! The file keeps the native layout of a view's types in every representation, so only the
//! bytes of each data item change: external32 (big-endian) where every basic type has its
//! native size there, and a user representation where its `dtype_file_extent_fn` gives every
//! basic type of the view and of the access its native size. Others are refused with
//! MPI_ERR_UNSUPPORTED_DATAREP. An access converts its whole data stream in one step: the
//! program's conversion function is called once per access, with position 0 and the access's
//! data items.

use super::access::{Direction, Memory};
use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::datatype::sig::{Sig, convert};
use crate::datatype::{self, TypeData};
use crate::error::{MpiResult, err};
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

/// Checks that `rep` (named `name`) stores every basic type of `sig` in its native size.
fn check_file_sizes(rep: &dyn UserDatarep, name: &str, sig: &Sig, what: &str) -> MpiResult<()> {
    for b in sig.basic_types() {
        let extent = rep.file_extent(b.handle)?;
        if extent != b.size {
            return err(
                MPI_ERR_UNSUPPORTED_DATAREP,
                format!(
                    "{what}: the data representation \"{name}\" stores {} in {extent} bytes where it has {} in memory; \
                     representations that change sizes are not implemented yet in oxmpi",
                    b.name, b.size
                ),
            );
        }
    }
    Ok(())
}

impl Repr {
    /// The representation `name` for a view of `types` (its etype and filetype).
    pub fn for_view(name: &str, types: [&TypeData; 2]) -> MpiResult<Repr> {
        match name {
            "native" | "internal" => return Ok(Repr::Native),
            "external32" if types.iter().all(|t| t.sig.ext_size == t.size) => return Ok(Repr::External32),
            "external32" => {
                return err(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    "external32 views of types whose external32 size differs from their native size (such as \
                     MPI_LONG) are not implemented yet in oxmpi",
                );
            }
            _ => {}
        }
        // Not held while the program's function runs.
        let rep = registered().get(name).cloned();
        let Some(rep) = rep else {
            return err(MPI_ERR_UNSUPPORTED_DATAREP, format!("unknown data representation \"{name}\""));
        };
        for (t, what) in types.iter().zip(["the etype", "the filetype"]) {
            check_file_sizes(&*rep, name, &t.sig, what)?;
        }
        Ok(Repr::User(rep))
    }

    /// How an access of `mem` in direction `dir` converts its data (None: it moves as it is),
    /// after checking the memory type against the representation.
    pub fn conversion(&self, name: &str, mem: &Memory, dir: Direction) -> MpiResult<Option<Conversion>> {
        match self {
            Repr::Native => Ok(None),
            Repr::External32 => Ok(Some(Conversion::External32(external32_sig(mem)?))),
            Repr::User(rep) if !rep.converts(dir) => Ok(None),
            Repr::User(rep) => {
                let sig = datatype::lookup(mem.datatype)?.data().sig.clone();
                check_file_sizes(&**rep, name, &sig, "the memory type")?;
                Ok(Some(Conversion::User(rep.clone(), sig)))
            }
        }
    }

    /// MPI_File_get_type_extent of `dt` in this representation.
    pub fn type_extent(&self, name: &str, dt: MPI_Datatype) -> MpiResult<i64> {
        let t = datatype::lookup(dt)?;
        if let (Repr::User(rep), Some(b)) = (self, datatype::builtin::builtin(dt)) {
            return Ok(rep.file_extent(b.handle)? as i64);
        }
        if let Repr::User(rep) = self {
            check_file_sizes(&**rep, name, &t.data().sig, "the datatype")?;
        }
        Ok(t.data().extent() as i64)
    }
}

/// The type signature of a memory type for external32 conversion (only types whose
/// external32 size is their native size).
fn external32_sig(mem: &Memory) -> MpiResult<Arc<Sig>> {
    let sig = datatype::lookup(mem.datatype)?.data().sig.clone();
    if sig.ext_size != sig.size {
        return err(
            MPI_ERR_UNSUPPORTED_DATAREP,
            "external32 access with a memory type whose external32 size differs from its native size (such as \
             MPI_LONG) is not implemented yet in oxmpi",
        );
    }
    Ok(sig)
}

/// The conversion of one access's data stream (with the memory type's signature).
pub enum Conversion {
    External32(Arc<Sig>),
    User(Arc<dyn UserDatarep>, Arc<Sig>),
}

impl Conversion {
    /// The data of a write as the file stores it: the program's memory packed and converted.
    ///
    /// # Safety
    /// `mem` describes memory of the program readable for its `count` elements.
    pub unsafe fn to_file(&self, mem: &Memory) -> MpiResult<Vec<u8>> {
        let len = mem.bytes();
        let mut file = vec![0u8; len];
        match self {
            Conversion::External32(sig) => {
                // SAFETY: the caller's contract on `mem`.
                let mut native = unsafe { mem.layout.pack_to_vec(mem.addr as *const u8, mem.count, 0..len) };
                convert(sig, mem.count, &mut native, &mut file, true);
            }
            // SAFETY: the caller's contract on `mem`.
            Conversion::User(rep, sig) => {
                unsafe { rep.write(mem.addr, mem.datatype, mem.count * sig.elems, &mut file) }?
            }
        }
        Ok(file)
    }

    /// After a read of the first `n` bytes of `file` (the access's data stream as the file
    /// stores it): stores what was read into the program's memory (only whole data items,
    /// for a user representation).
    ///
    /// # Safety
    /// `mem` describes memory of the program writable for its `count` elements.
    pub unsafe fn from_file(&self, mem: &Memory, file: &mut [u8], n: usize) -> MpiResult<()> {
        match self {
            Conversion::External32(sig) => {
                let mut native = vec![0u8; file.len()];
                convert(sig, mem.count, &mut native, file, false);
                // SAFETY: the caller's contract on `mem`; only the bytes read are stored.
                unsafe { mem.layout.unpack(mem.addr as *mut u8, mem.count, 0, &native[..n]) };
                Ok(())
            }
            Conversion::User(rep, sig) => {
                let (items, _) = sig.elements_in(n);
                // SAFETY: the caller's contract on `mem`.
                unsafe { rep.read(mem.addr, mem.datatype, items, &file[..n]) }
            }
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
    fn user_representations_convert_whole_items_and_keep_native_sizes() {
        register("datarep-test-complement", Arc::new(Complement { int_extent: 4 })).unwrap();
        register("datarep-test-wide", Arc::new(Complement { int_extent: 8 })).unwrap();
        let dup = register("datarep-test-complement", Arc::new(Complement { int_extent: 4 }));
        assert_eq!(dup.unwrap_err().code, MPI_ERR_DUP_DATAREP);
        assert_eq!(
            register("external32", Arc::new(Complement { int_extent: 4 })).unwrap_err().code,
            MPI_ERR_DUP_DATAREP
        );
        let int = datatype::lookup(MPI_INT).unwrap().data().into_owned();
        let repr = Repr::for_view("datarep-test-complement", [&int, &int]).unwrap();
        let wide = Repr::for_view("datarep-test-wide", [&int, &int]);
        assert_eq!(wide.err().unwrap().code, MPI_ERR_UNSUPPORTED_DATAREP);
        assert_eq!(repr.type_extent("datarep-test-complement", MPI_INT).unwrap(), 4);
        let unknown = Repr::for_view("datarep-test-none", [&int, &int]);
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
    }
}
