//! Info objects: ordered (key, value) string pairs behind MPI_Info handles, and MPI_INFO_ENV.
//!
//! MPI-4 lets programs use info objects before MPI_Init and after MPI_Finalize, so the table
//! lives in its own lock rather than in the runtime.

use crate::abi::consts::*;
use crate::abi::types::MPI_Info;
use crate::error::{MpiResult, err};
use std::sync::{Mutex, MutexGuard};

/// Handles of user info objects: kind DIRECT (bits 31..30 = 10), object INFO (7).
const DIRECT_INFO: u32 = 0x9c00_0000;
/// DIRECT handles index a table of at most this many entries (the 26-bit payload).
const MAX_INFOS: usize = 0x0400_0000;

/// Keys and values in the order keys were first set (the order of MPI_Info_get_nthkey).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Info {
    pub entries: Vec<(String, String)>,
}

impl Info {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Sets `key`; a key already present keeps its position.
    pub fn set(&mut self, key: &str, value: &str) {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = value.to_string(),
            None => self.entries.push((key.to_string(), value.to_string())),
        }
    }

    pub fn delete(&mut self, key: &str) -> MpiResult<()> {
        match self.entries.iter().position(|(k, _)| k == key) {
            Some(i) => {
                self.entries.remove(i);
                Ok(())
            }
            None => err(MPI_ERR_INFO_NOKEY, format!("MPI_Info key {key} is not defined")),
        }
    }

    pub fn nth_key(&self, n: i32) -> MpiResult<&str> {
        if n < 0 {
            return err(MPI_ERR_ARG, format!("invalid value for n, must be non-negative but is {n}"));
        }
        match self.entries.get(n as usize) {
            Some((k, _)) => Ok(k),
            None => {
                err(MPI_ERR_ARG, format!("requested key {n} but this MPI_Info only has {} keys", self.entries.len()))
            }
        }
    }
}

/// Checks a key as MPICH does: not empty or blank, at most MPI_MAX_INFO_KEY characters.
pub fn check_key(key: &str) -> MpiResult<()> {
    if key.len() > MPI_MAX_INFO_KEY as usize {
        return err(
            MPI_ERR_INFO_KEY,
            format!("info key is too long ({} characters, at most {MPI_MAX_INFO_KEY})", key.len()),
        );
    }
    if key.trim().is_empty() {
        return err(MPI_ERR_INFO_KEY, "empty or blank info key");
    }
    Ok(())
}

/// Checks a value: at most MPI_MAX_INFO_VAL characters.
pub fn check_value(value: &str) -> MpiResult<()> {
    if value.len() > MPI_MAX_INFO_VAL as usize {
        return err(
            MPI_ERR_INFO_VALUE,
            format!("info value is too long ({} characters, at most {MPI_MAX_INFO_VAL})", value.len()),
        );
    }
    Ok(())
}

struct Table {
    /// MPI_INFO_ENV, filled on first use.
    env: Option<Info>,
    user: Vec<Option<Info>>,
}

static TABLE: Mutex<Table> = Mutex::new(Table { env: None, user: Vec::new() });

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The keys MPI-4 suggests for MPI_INFO_ENV, as far as this process can tell.
fn environment() -> Info {
    let mut info = Info::default();
    let args: Vec<String> = std::env::args().collect();
    if let Some(cmd) = args.first() {
        info.set("command", cmd);
    }
    if args.len() > 1 {
        info.set("argv", &args[1..].join(" "));
    }
    if let Some(size) = std::env::var("PMI_SIZE").ok().filter(|s| s.parse::<u32>().is_ok()) {
        info.set("maxprocs", &size);
    } else {
        info.set("maxprocs", "1");
    }
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        info.set("host", host.trim());
    }
    info.set("arch", std::env::consts::ARCH);
    if let Ok(dir) = std::env::current_dir() {
        info.set("wdir", &dir.to_string_lossy());
    }
    info
}

fn slot_of(handle: MPI_Info) -> Option<usize> {
    let h = handle as u32;
    (h & 0xfc00_0000 == DIRECT_INFO).then_some((h & 0x03ff_ffff) as usize)
}

fn invalid(handle: MPI_Info) -> crate::error::MpiError {
    if handle == MPI_INFO_NULL {
        // MPICH reports a null info object as a bad argument rather than MPI_ERR_INFO.
        crate::error::MpiError::new(MPI_ERR_ARG, "null info object (MPI_INFO_NULL)")
    } else {
        crate::error::MpiError::new(
            MPI_ERR_INFO,
            format!("invalid info (0x{:08x}), perhaps already freed", handle as u32),
        )
    }
}

/// Runs `f` on the info object behind `handle` (MPI_INFO_ENV included).
pub fn with<R>(handle: MPI_Info, f: impl FnOnce(&mut Info) -> MpiResult<R>) -> MpiResult<R> {
    let mut t = table();
    if handle == MPI_INFO_ENV {
        return f(t.env.get_or_insert_with(environment));
    }
    match slot_of(handle).and_then(|s| t.user.get_mut(s)).and_then(Option::as_mut) {
        Some(info) => f(info),
        None => Err(invalid(handle)),
    }
}

/// A copy of the object behind `handle`; MPI_INFO_NULL reads as empty (for the many calls
/// that take hints and accept MPI_INFO_NULL).
pub fn get_or_empty(handle: MPI_Info) -> MpiResult<Info> {
    if handle == MPI_INFO_NULL { Ok(Info::default()) } else { with(handle, |i| Ok(i.clone())) }
}

/// A new handle for `info`.
pub fn insert(info: Info) -> MpiResult<MPI_Info> {
    let mut t = table();
    let slot = match t.user.iter().position(Option::is_none) {
        Some(s) => s,
        None if t.user.len() < MAX_INFOS => {
            t.user.push(None);
            t.user.len() - 1
        }
        None => return err(MPI_ERR_OTHER, "too many info objects"),
    };
    t.user[slot] = Some(info);
    Ok((DIRECT_INFO | slot as u32) as MPI_Info)
}

/// MPI_Info_free. Freeing MPI_INFO_ENV only resets the caller's handle, as in MPICH.
pub fn free(handle: MPI_Info) -> MpiResult<()> {
    if handle == MPI_INFO_ENV {
        return Ok(());
    }
    let mut t = table();
    match slot_of(handle).and_then(|s| t.user.get_mut(s)) {
        Some(entry @ Some(_)) => {
            *entry = None;
            Ok(())
        }
        _ => Err(invalid(handle)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_order_and_limits() {
        let mut i = Info::default();
        i.set("b", "1");
        i.set("a", "2");
        i.set("b", "3");
        assert_eq!(i.nth_key(0).unwrap(), "b");
        assert_eq!(i.get("b"), Some("3"));
        assert_eq!(i.nth_key(2).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(i.nth_key(-1).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(i.delete("zz").unwrap_err().code, MPI_ERR_INFO_NOKEY);
        i.delete("b").unwrap();
        assert_eq!(i.nth_key(0).unwrap(), "a");
        assert!(check_key(&"k".repeat(255)).is_ok());
        assert_eq!(check_key(&"k".repeat(256)).unwrap_err().code, MPI_ERR_INFO_KEY);
        assert_eq!(check_key(" ").unwrap_err().code, MPI_ERR_INFO_KEY);
        assert_eq!(check_value(&"v".repeat(1025)).unwrap_err().code, MPI_ERR_INFO_VALUE);
    }

    #[test]
    fn handles() {
        let h = insert(Info::default()).unwrap();
        with(h, |i| {
            i.set("k", "v");
            Ok(())
        })
        .unwrap();
        assert_eq!(get_or_empty(h).unwrap().get("k"), Some("v"));
        free(h).unwrap();
        assert_eq!(free(h).unwrap_err().code, MPI_ERR_INFO);
        assert_eq!(with(MPI_INFO_NULL, |_| Ok(())).unwrap_err().code, MPI_ERR_ARG);
        assert!(with(MPI_INFO_ENV, |i| Ok(i.get("arch").is_some())).unwrap());
    }
}
