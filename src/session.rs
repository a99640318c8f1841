//! MPI-4 sessions: the table behind MPI_Session handles and the process sets they offer.
//!
//! A session is a user of the runtime (see `runtime`): the first session (or MPI_Init)
//! brings the runtime up, the last one to finalize tears it down. Its error handler lives in
//! `errhandler` beside the communicators' handlers. The process sets are the two that MPI
//! predefines, `mpi://WORLD` and `mpi://SELF`; their names match without regard to case, as
//! MPICH's MPI_Group_from_session_pset does.

use crate::abi::consts::*;
use crate::error::{MpiError, MpiResult, err};
use crate::info::Info;
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

/// Handles of sessions, as MPICH makes them: kind DIRECT (bits 31..30 = 10), object
/// SESSION (0xe); bits 25..0 index the table.
const DIRECT_SESSION: u32 = 0xb800_0000;
const INDEX_MASK: u32 = 0x03ff_ffff;

/// The predefined process sets, in the order MPI_Session_get_nth_pset lists them.
pub const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The info key of MPI_Session_init / MPI_Session_get_info that carries the thread level.
const THREAD_LEVEL_KEY: &str = "thread_level";

#[derive(Debug, Clone)]
pub struct Session {
    /// The thread level provided to this session.
    pub thread_level: c_int,
}

impl Session {
    /// The hints in use (MPI_Session_get_info): the thread level provided, as MPICH says.
    pub fn info(&self) -> Info {
        let mut info = Info::default();
        info.set(THREAD_LEVEL_KEY, thread_level_name(self.thread_level));
        info
    }
}

static SESSIONS: Mutex<Vec<Option<Session>>> = Mutex::new(Vec::new());

fn table() -> MutexGuard<'static, Vec<Option<Session>>> {
    SESSIONS.lock().unwrap_or_else(|p| p.into_inner())
}

fn index_of(handle: c_int) -> Option<usize> {
    let h = handle as u32;
    (h & !INDEX_MASK == DIRECT_SESSION).then_some((h & INDEX_MASK) as usize)
}

fn invalid(handle: c_int) -> MpiError {
    if handle == MPI_SESSION_NULL {
        MpiError::new(MPI_ERR_SESSION, "invalid session (MPI_SESSION_NULL)")
    } else {
        MpiError::new(MPI_ERR_SESSION, format!("invalid session (0x{:08x}), perhaps already finalized", handle as u32))
    }
}

/// The name of thread level `level` as MPI writes it in info values.
pub fn thread_level_name(level: c_int) -> &'static str {
    match level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// The thread level an MPI_Session_init info asks for (MPI_THREAD_SINGLE when it does not
/// say); an unknown value is MPI_ERR_OTHER, as in MPICH.
pub fn requested_thread_level(hints: &Info) -> MpiResult<c_int> {
    let Some(v) = hints.get(THREAD_LEVEL_KEY) else { return Ok(MPI_THREAD_SINGLE) };
    let levels = [MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE];
    match levels.into_iter().find(|&l| thread_level_name(l) == v) {
        Some(l) => Ok(l),
        None => err(MPI_ERR_OTHER, format!("invalid value \"{v}\" of info key \"{THREAD_LEVEL_KEY}\"")),
    }
}

/// MPI_Session_init: brings the runtime up if needed and returns the new session's handle.
pub fn init(hints: &Info) -> MpiResult<c_int> {
    let required = requested_thread_level(hints)?;
    let provided = crate::runtime::session_init(required)?;
    let session = Session { thread_level: provided };
    let mut t = table();
    let index = match t.iter().position(Option::is_none) {
        Some(i) => i,
        None if t.len() <= INDEX_MASK as usize => {
            t.push(None);
            t.len() - 1
        }
        None => {
            drop(t);
            let _ = crate::runtime::session_finalize();
            return err(MPI_ERR_OTHER, "too many sessions");
        }
    };
    t[index] = Some(session);
    Ok((DIRECT_SESSION | index as u32) as c_int)
}

/// A copy of the live session `handle`.
pub fn get(handle: c_int) -> MpiResult<Session> {
    index_of(handle).and_then(|i| table().get(i).cloned().flatten()).ok_or_else(|| invalid(handle))
}

/// MPI_Session_finalize: ends the session; the runtime goes with its last user.
pub fn finalize(handle: c_int) -> MpiResult<()> {
    get(handle)?;
    crate::runtime::session_finalize()?;
    table()[index_of(handle).unwrap()] = None;
    crate::errhandler::on_session_finalize(handle);
    Ok(())
}

/// The predefined process set named `name` (any case), as its index in `PSETS`.
fn pset_index(name: &str) -> MpiResult<usize> {
    PSETS
        .iter()
        .position(|p| p.eq_ignore_ascii_case(name))
        .ok_or_else(|| MpiError::new(MPI_ERR_ARG, format!("invalid process set name \"{name}\"")))
}

/// The members (world ranks) of process set `name`, seen from session `handle`.
pub fn pset_members(handle: c_int, name: &str) -> MpiResult<Vec<usize>> {
    get(handle)?;
    let index = pset_index(name)?;
    crate::runtime::with(|rt| {
        let world = rt.comms.get(MPI_COMM_WORLD)?;
        Ok(if index == 0 { world.members.clone() } else { vec![world.members[world.rank]] })
    })
}

/// MPI_Session_get_pset_info: the info of a process set (its "mpi_size").
pub fn pset_info(handle: c_int, name: &str) -> MpiResult<Info> {
    let members = pset_members(handle, name)?;
    let mut info = Info::default();
    info.set("mpi_size", &members.len().to_string());
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_levels() {
        assert_eq!(pset_index("mpi://world").unwrap(), 0);
        assert_eq!(pset_index("MPI://Self").unwrap(), 1);
        assert_eq!(pset_index("mpi://nope").unwrap_err().code, MPI_ERR_ARG);
        let mut i = Info::default();
        assert_eq!(requested_thread_level(&i).unwrap(), MPI_THREAD_SINGLE);
        i.set(THREAD_LEVEL_KEY, "MPI_THREAD_MULTIPLE");
        assert_eq!(requested_thread_level(&i).unwrap(), MPI_THREAD_MULTIPLE);
        i.set(THREAD_LEVEL_KEY, "many");
        assert_eq!(requested_thread_level(&i).unwrap_err().code, MPI_ERR_OTHER);
        assert_eq!(get(MPI_SESSION_NULL).unwrap_err().code, MPI_ERR_SESSION);
        assert_eq!(index_of(0xb800_0003_u32 as c_int), Some(3));
    }
}
