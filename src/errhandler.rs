//! Error handlers, error classes, codes and strings.
//!
//! Errors are off the fast path, so one `Mutex` guards all of this state. User callbacks are
//! never called while it is held: a handler may itself call MPI (even set handlers).
//!
//! Each failure returns a code of its own: the error class in the low 7 bits and, above them,
//! the sequence number of the failure, whose message (naming the function and the bad
//! argument) is kept in a ring of the last `MESSAGE_RING` failures. `MPI_Error_class` masks the
//! class out; `MPI_Error_string` of a code gives its message while the ring still holds it and
//! the generic text of its class after that, and of a class always the generic text. Codes the
//! program supplies (`MPI_*_call_errhandler`) and `MPI_ERR_IN_STATUS` pass unchanged.
//! User-defined classes and codes (`MPI_Add_error_class/code`) take values above
//! `MPI_ERR_LASTCODE`, from one counter whose largest value is the `MPI_LASTUSEDCODE`
//! attribute.

use crate::abi::consts::*;
use crate::abi::types::{MPI_Comm, MPI_Errhandler};
use crate::error::{MpiError, MpiResult, err};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, c_void};
use std::sync::{LazyLock, Mutex, MutexGuard};

/// A user communicator error handler: `void fn(MPI_Comm *, int *, ...)`.
pub type CommErrhandlerFn = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);

/// The kind of object a user error handler was created for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerKind {
    Comm,
    Win,
    File,
    Session,
}

/// A handler created with `MPI_*_create_errhandler`. The function pointer is stored untyped;
/// every kind has the C shape `void fn(HANDLE *, int *, ...)` with a 4- or 8-byte handle.
#[derive(Debug, Clone, Copy)]
struct UserHandler {
    kind: HandlerKind,
    func: unsafe extern "C" fn(*mut c_int, *mut c_int, ...),
    /// One for the user's handle plus one per object it is attached to.
    refs: usize,
}

/// First handle of user error handlers: DIRECT kind (bits 31..30 = 10), object ERRHANDLER (5).
const USER_HANDLE_BASE: c_int = 0x9400_0000_u32 as c_int;
/// DIRECT handles index a table of at most this many entries (the 26-bit payload).
const USER_HANDLE_MAX: usize = 0x03ff_ffff;
/// First value handed out by `MPI_Add_error_class` / `MPI_Add_error_code`.
const FIRST_DYNAMIC_CODE: c_int = MPI_ERR_LASTCODE + 1;
/// Bits of a returned code that hold its class (every predefined class is below 128).
const CLASS_BITS: u32 = 7;
const CLASS_MASK: c_int = (1 << CLASS_BITS) - 1;
/// Largest failure sequence number: codes stay at or below `MPI_ERR_LASTCODE`.
const MAX_SEQUENCE: u32 = (MPI_ERR_LASTCODE as u32) >> CLASS_BITS;
/// How many failure messages are kept; older codes give the text of their class.
const MESSAGE_RING: usize = 256;

/// A dynamic class or code from `MPI_Add_error_class/code`.
#[derive(Debug, Clone)]
struct DynamicCode {
    /// The class of a code; equals the value itself for a class.
    class: c_int,
    text: Option<String>,
}

struct State {
    user: Vec<Option<UserHandler>>,
    /// Communicators whose handler is not the default MPI_ERRORS_ARE_FATAL.
    comm_handlers: HashMap<MPI_Comm, MPI_Errhandler>,
    /// The handler of every live session (MPI_Session handles).
    session_handlers: HashMap<c_int, MPI_Errhandler>,
    /// Windows whose handler is not the default MPI_ERRORS_ARE_FATAL.
    win_handlers: HashMap<c_int, MPI_Errhandler>,
    /// The handler of MPI_FILE_NULL: the default of files, MPI_ERRORS_RETURN unless set.
    file_null_handler: MPI_Errhandler,
    /// The handler of every open file, by the value of its MPI_File.
    file_handlers: HashMap<usize, MPI_Errhandler>,
    /// Messages of the last failures: slot `sequence % MESSAGE_RING` holds (code, message).
    messages: Vec<Option<(c_int, String)>>,
    /// Sequence number of the next failure (1..=MAX_SEQUENCE, then 1 again).
    next_sequence: u32,
    /// The sequence numbers have wrapped around: every number may be a live code.
    sequence_wrapped: bool,
    dynamic: BTreeMap<c_int, DynamicCode>,
    next_dynamic: c_int,
    last_used: c_int,
}

impl State {
    fn new() -> State {
        State {
            user: Vec::new(),
            comm_handlers: HashMap::new(),
            session_handlers: HashMap::new(),
            win_handlers: HashMap::new(),
            file_null_handler: MPI_ERRORS_RETURN,
            file_handlers: HashMap::new(),
            messages: Vec::new(),
            next_sequence: 1,
            sequence_wrapped: false,
            dynamic: BTreeMap::new(),
            next_dynamic: FIRST_DYNAMIC_CODE,
            last_used: MPI_ERR_LASTCODE,
        }
    }
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::new()));

/// The state, even after a panic elsewhere poisoned the lock: error reporting must still work.
fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether `eh` is one of the handlers MPI predefines.
pub fn is_predefined(eh: MPI_Errhandler) -> bool {
    eh == MPI_ERRORS_ARE_FATAL
        || eh == MPI_ERRORS_RETURN
        || eh == MPI_ERRORS_ABORT
        || eh == MPIR_ERRORS_THROW_EXCEPTIONS
}

/// The table index of a user handler handle, if it has the user-handle shape.
fn user_index(eh: MPI_Errhandler) -> Option<usize> {
    let off = eh.wrapping_sub(USER_HANDLE_BASE);
    (0..USER_HANDLE_MAX as c_int).contains(&off).then_some(off as usize)
}

/// The handle of user handler table slot `index`.
pub fn user_handle(index: usize) -> MPI_Errhandler {
    USER_HANDLE_BASE.wrapping_add(index as c_int)
}

impl State {
    fn user_mut(&mut self, eh: MPI_Errhandler) -> Option<&mut UserHandler> {
        user_index(eh).and_then(|i| self.user.get_mut(i)).and_then(Option::as_mut)
    }

    fn add_ref(&mut self, eh: MPI_Errhandler) {
        if let Some(u) = self.user_mut(eh) {
            u.refs += 1;
        }
    }

    fn release(&mut self, eh: MPI_Errhandler) {
        if let Some(i) = user_index(eh)
            && let Some(Some(u)) = self.user.get_mut(i)
        {
            u.refs -= 1;
            if u.refs == 0 {
                self.user[i] = None;
            }
        }
    }
}

/// Creates a user error handler for objects of `kind`; the caller owns one reference.
pub fn create(kind: HandlerKind, func: unsafe extern "C" fn(*mut c_int, *mut c_int, ...)) -> MpiResult<MPI_Errhandler> {
    let mut st = state();
    let handler = UserHandler { kind, func, refs: 1 };
    let index = match st.user.iter().position(Option::is_none) {
        Some(i) => {
            st.user[i] = Some(handler);
            i
        }
        None if st.user.len() < USER_HANDLE_MAX => {
            st.user.push(Some(handler));
            st.user.len() - 1
        }
        None => return err(MPI_ERR_OTHER, "too many error handlers"),
    };
    Ok(user_handle(index))
}

/// Checks that `eh` is a live handler usable on objects of `kind`.
pub fn check(eh: MPI_Errhandler, kind: HandlerKind) -> MpiResult {
    if is_predefined(eh) {
        return Ok(());
    }
    match state().user_mut(eh) {
        Some(u) if u.kind == kind => Ok(()),
        Some(u) => err(
            MPI_ERR_ARG,
            format!("invalid errhandler argument (errhandler=0x{eh:08x} was created for {:?} objects)", u.kind),
        ),
        None => err(MPI_ERR_ARG, format!("invalid errhandler argument (errhandler=0x{eh:08x})")),
    }
}

/// `MPI_Errhandler_free`: drops the user's reference. Predefined handlers may be freed (a no-op).
pub fn free(eh: MPI_Errhandler) -> MpiResult {
    if is_predefined(eh) {
        return Ok(());
    }
    let mut st = state();
    if st.user_mut(eh).is_none() {
        return err(MPI_ERR_ARG, format!("invalid errhandler argument (errhandler=0x{eh:08x})"));
    }
    st.release(eh);
    Ok(())
}

/// The handler of `comm` (MPI_ERRORS_ARE_FATAL unless set). The result is a new reference for
/// user handlers, as `MPI_Comm_get_errhandler` requires.
pub fn get_comm_errhandler(comm: MPI_Comm) -> MPI_Errhandler {
    let mut st = state();
    let eh = st.comm_handlers.get(&comm).copied().unwrap_or(MPI_ERRORS_ARE_FATAL);
    st.add_ref(eh);
    eh
}

/// Attaches `eh` to `comm`, releasing the previous handler. `eh` must have passed `check`.
pub fn set_comm_errhandler(comm: MPI_Comm, eh: MPI_Errhandler) {
    let mut st = state();
    st.add_ref(eh);
    if let Some(old) = st.comm_handlers.insert(comm, eh) {
        st.release(old);
    }
}

/// A new communicator inherits the handler of the one it was made from.
pub fn on_comm_dup(parent: MPI_Comm, child: MPI_Comm) {
    let mut st = state();
    if let Some(eh) = st.comm_handlers.get(&parent).copied() {
        st.add_ref(eh);
        if let Some(old) = st.comm_handlers.insert(child, eh) {
            st.release(old);
        }
    }
}

/// A freed communicator drops its handler reference.
pub fn on_comm_free(comm: MPI_Comm) {
    let mut st = state();
    if let Some(eh) = st.comm_handlers.remove(&comm) {
        st.release(eh);
    }
}

/// A new session starts with handler `eh` (which passed `check`, or is MPI_ERRHANDLER_NULL
/// for the default MPI_ERRORS_ARE_FATAL).
pub fn on_session_init(session: c_int, eh: MPI_Errhandler) {
    let eh = if eh == MPI_ERRHANDLER_NULL { MPI_ERRORS_ARE_FATAL } else { eh };
    let mut st = state();
    st.add_ref(eh);
    if let Some(old) = st.session_handlers.insert(session, eh) {
        st.release(old);
    }
}

/// Attaches `eh` to the live `session`, releasing the previous handler.
pub fn set_session_errhandler(session: c_int, eh: MPI_Errhandler) {
    on_session_init(session, eh);
}

/// The handler of `session`, as a new reference (MPI_Session_get_errhandler).
pub fn get_session_errhandler(session: c_int) -> MPI_Errhandler {
    let mut st = state();
    let eh = st.session_handlers.get(&session).copied().unwrap_or(MPI_ERRORS_ARE_FATAL);
    st.add_ref(eh);
    eh
}

/// A finalized session drops its handler reference.
pub fn on_session_finalize(session: c_int) {
    let mut st = state();
    if let Some(eh) = st.session_handlers.remove(&session) {
        st.release(eh);
    }
}

/// The handler of window `win` (MPI_ERRORS_ARE_FATAL unless set), as a new reference
/// (MPI_Win_get_errhandler).
pub fn get_win_errhandler(win: c_int) -> MPI_Errhandler {
    let mut st = state();
    let eh = st.win_handlers.get(&win).copied().unwrap_or(MPI_ERRORS_ARE_FATAL);
    st.add_ref(eh);
    eh
}

/// Attaches `eh` (which passed `check`) to the live window `win`, releasing the previous one.
pub fn set_win_errhandler(win: c_int, eh: MPI_Errhandler) {
    let mut st = state();
    st.add_ref(eh);
    if let Some(old) = st.win_handlers.insert(win, eh) {
        st.release(old);
    }
}

/// A freed window drops its handler reference.
pub fn on_win_free(win: c_int) {
    let mut st = state();
    if let Some(eh) = st.win_handlers.remove(&win) {
        st.release(eh);
    }
}

/// The handler of `file` (the value of an MPI_File; 0 is MPI_FILE_NULL, whose handler is
/// the default of files), as a new reference.
pub fn get_file_errhandler(file: usize) -> MPI_Errhandler {
    let mut st = state();
    let eh = st.file_handlers.get(&file).copied().unwrap_or(st.file_null_handler);
    st.add_ref(eh);
    eh
}

/// Attaches `eh` (which passed `check`) to `file`, an open file or MPI_FILE_NULL (0),
/// releasing the previous handler.
pub fn set_file_errhandler(file: usize, eh: MPI_Errhandler) {
    let mut st = state();
    st.add_ref(eh);
    let old = if file == 0 {
        Some(std::mem::replace(&mut st.file_null_handler, eh))
    } else {
        st.file_handlers.insert(file, eh)
    };
    if let Some(old) = old {
        st.release(old);
    }
}

/// A newly opened file starts with the handler of MPI_FILE_NULL at that moment.
pub fn on_file_open(file: usize) {
    let eh = state().file_null_handler;
    set_file_errhandler(file, eh);
}

/// A closed file drops its handler reference.
pub fn on_file_close(file: usize) {
    let mut st = state();
    if let Some(eh) = st.file_handlers.remove(&file) {
        st.release(eh);
    }
}

/// What to do about an error, decided under the lock and carried out after it is released.
enum Action {
    Fatal,
    Return,
    User(unsafe extern "C" fn(*mut c_int, *mut c_int, ...)),
}

fn action_for(comm: Option<MPI_Comm>) -> (MPI_Comm, Action) {
    // Errors not tied to a valid communicator go to MPI_COMM_WORLD's handler, as in MPICH.
    // A communicator with a registered handler is live (freeing it drops the entry).
    let registered = |c: &MPI_Comm| state().comm_handlers.contains_key(c);
    let comm = comm.filter(|c| registered(c) || crate::comm::is_valid(*c)).unwrap_or(MPI_COMM_WORLD);
    let st = state();
    let eh = st.comm_handlers.get(&comm).copied().unwrap_or(MPI_ERRORS_ARE_FATAL);
    (comm, st.action_of(eh))
}

impl State {
    fn action_of(&self, eh: MPI_Errhandler) -> Action {
        if eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT {
            Action::Fatal
        } else if let Some(u) = user_index(eh).and_then(|i| self.user.get(i)).and_then(|u| u.as_ref()) {
            Action::User(u.func)
        } else {
            Action::Return
        }
    }
}

/// `"rank 3"`: the rank in MPI_COMM_WORLD, or before MPI_Init has it (an error in MPI_Init
/// itself) the rank the launcher gave in the environment; a process started without a
/// launcher is a singleton, rank 0.
pub fn who() -> String {
    if let Some(r) = crate::runtime::world_rank() {
        return format!("rank {r}");
    }
    let from_launcher = ["PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|name| std::env::var(name).ok().and_then(|v| v.trim().parse::<u32>().ok()));
    match from_launcher {
        Some(r) => format!("rank {r}"),
        None if std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some() => "rank ?".to_string(),
        None => "rank 0".to_string(),
    }
}

/// The text reported for an error raised by `fn_name`.
fn describe(fn_name: &str, msg: &str) -> String {
    if msg.starts_with(fn_name) { msg.to_string() } else { format!("{fn_name}: {msg}") }
}

/// Reports `err`, raised by MPI function `fn_name` on `comm`, through the error handler that
/// applies, and returns the code C gets back. Fatal handlers end the job and do not return.
pub fn raise(fn_name: &str, comm: Option<MPI_Comm>, err: MpiError) -> c_int {
    // A file's request names its file (`abi::file`).
    if let Some(file) = err.comm.map(|h| h as u32 as usize).filter(|&h| crate::io::file::is_handle(h)) {
        return raise_on_file(fn_name, file as *mut c_void, err);
    }
    let (comm, action) = action_for(err.comm.or(comm));
    dispatch(fn_name, comm, action, err)
}

/// As `raise`, for an error raised on `session`: its handler applies while it is live, else
/// MPI_COMM_WORLD's (as for an invalid communicator).
pub fn raise_on_session(fn_name: &str, session: c_int, err: MpiError) -> c_int {
    let action = {
        let st = state();
        st.session_handlers.get(&session).map(|&eh| st.action_of(eh))
    };
    match action {
        Some(action) => dispatch(fn_name, session, action, err),
        None => raise(fn_name, None, err),
    }
}

/// As `raise`, for an error raised on window `win`: the handler of a live window is the one
/// set on it, else MPI_ERRORS_ARE_FATAL, the standard's default for windows and what
/// MPI_Win_get_errhandler reports; MPI_COMM_WORLD's handles errors on a window that is not
/// (or no longer) valid.
pub fn raise_on_win(fn_name: &str, win: c_int, err: MpiError) -> c_int {
    let live = crate::win::is_valid(win);
    let action = {
        let st = state();
        let eh = st.win_handlers.get(&win).copied();
        // A window freed by the failing call still has its entry until MPI_Win_free ends.
        (live || eh.is_some()).then(|| st.action_of(eh.unwrap_or(MPI_ERRORS_ARE_FATAL)))
    };
    match action {
        Some(action) => dispatch(fn_name, win, action, err),
        None => raise(fn_name, None, err),
    }
}

/// As `raise`, for an error raised on file `file`: its handler while it is open, else the
/// default file handler, MPI_FILE_NULL's; a user handler gets `file` back.
pub fn raise_on_file(fn_name: &str, file: *mut c_void, err: MpiError) -> c_int {
    let action = {
        let st = state();
        st.action_of(st.file_handlers.get(&(file as usize)).copied().unwrap_or(st.file_null_handler))
    };
    let mut object = file;
    dispatch_to(fn_name, (&raw mut object).cast(), action, err)
}

/// As `raise`, for functions that take the handler to use as an argument
/// (MPI_Session_init, MPI_Comm_create_from_group): a user handler gets a null object handle.
/// A handler that is not valid defers to MPI_COMM_WORLD's.
pub fn raise_with_handler(fn_name: &str, eh: MPI_Errhandler, null_object: c_int, err: MpiError) -> c_int {
    let action = {
        let st = state();
        let live = is_predefined(eh) || user_index(eh).and_then(|i| st.user.get(i)).is_some_and(|u| u.is_some());
        live.then(|| st.action_of(eh))
    };
    match action {
        Some(action) => dispatch(fn_name, null_object, action, err),
        None => raise(fn_name, None, err),
    }
}

/// Records the message of `err` and carries out `action`, passing `object` (a communicator,
/// session, window handle) to a user handler.
fn dispatch(fn_name: &str, mut object: c_int, action: Action, err: MpiError) -> c_int {
    dispatch_to(fn_name, &raw mut object, action, err)
}

/// As `dispatch`, with the object given by address: an `int` handle, or an `MPI_File`
/// pointer (which C handlers take as `MPI_File *`).
fn dispatch_to(fn_name: &str, object: *mut c_int, action: Action, err: MpiError) -> c_int {
    let text = describe(fn_name, &err.msg);
    let class = class_of(err.code);
    let mut code = if err.supplied { err.code } else { state().new_code(err.code, &text) };
    match action {
        // Printed once: by the launcher when it reports aborts, else by abort_job.
        Action::Fatal => crate::runtime::abort_job(class, &format!("{}: {text}", who())),
        Action::Return => {}
        Action::User(func) => {
            // SAFETY: `func` was registered by MPI_*_create_errhandler with C's
            // `void (HANDLE *, int *, ...)` shape, and `object` points at the caller's live
            // local of that HANDLE type (an int, or the MPI_File pointer of file handlers);
            // no lock is held, so the handler may call back into MPI.
            unsafe { func(object, &mut code) };
        }
    }
    code
}

/// The error `MPI_*_call_errhandler` hands to a handler: the code with its text.
fn user_supplied(code: c_int) -> MpiError {
    let mut text = String::new();
    error_string(code, &mut text);
    MpiError::supplied(code, text)
}

/// `MPI_Comm_call_errhandler`: runs `comm`'s handler on a code the user supplies.
pub fn call_comm_errhandler(comm: MPI_Comm, code: c_int) -> MpiResult {
    raise("MPI_Comm_call_errhandler", Some(comm), user_supplied(code));
    Ok(())
}

/// `MPI_Win_call_errhandler`: runs the handler of the live window `win` on `code`.
pub fn call_win_errhandler(win: c_int, code: c_int) -> MpiResult {
    raise_on_win("MPI_Win_call_errhandler", win, user_supplied(code));
    Ok(())
}

/// `MPI_File_call_errhandler`: runs the handler of `file` on `code`.
pub fn call_file_errhandler(file: *mut c_void, code: c_int) -> MpiResult {
    raise_on_file("MPI_File_call_errhandler", file, user_supplied(code));
    Ok(())
}

/// Whether `class` is a predefined class that failures are reported with.
fn is_error_class(class: c_int) -> bool {
    class > MPI_SUCCESS && class <= CLASS_MASK && class_text(class).is_some()
}

impl State {
    /// The code returned for a failure of `class` (a predefined class) described by `text`:
    /// a new code with the message stored. Other values (user-defined codes, codes returned
    /// earlier) and MPI_ERR_IN_STATUS, which programs compare directly, are returned as
    /// they are.
    fn new_code(&mut self, class: c_int, text: &str) -> c_int {
        if !is_error_class(class) || class == MPI_ERR_IN_STATUS {
            return class;
        }
        let sequence = self.next_sequence;
        if sequence == MAX_SEQUENCE {
            self.next_sequence = 1;
            self.sequence_wrapped = true;
        } else {
            self.next_sequence += 1;
        }
        let code = ((sequence << CLASS_BITS) as c_int) | class;
        let slot = sequence as usize % MESSAGE_RING;
        if self.messages.len() < MESSAGE_RING {
            self.messages.resize(MESSAGE_RING, None);
        }
        self.messages[slot] = Some((code, text.to_string()));
        code
    }

    /// The class of a code this library returned (sequence number and class bits), `None`
    /// for values that are no such code.
    fn returned_class(&self, code: c_int) -> Option<c_int> {
        if !(CLASS_MASK < code && code < MPI_ERR_LASTCODE) {
            return None;
        }
        let sequence = (code >> CLASS_BITS) as u32;
        let class = code & CLASS_MASK;
        let issued = self.sequence_wrapped || sequence < self.next_sequence;
        (issued && is_error_class(class)).then_some(class)
    }

    /// The stored message of the returned code `code`, while the ring holds it.
    fn message_of(&self, code: c_int) -> Option<&str> {
        let slot = (code >> CLASS_BITS) as usize % MESSAGE_RING;
        match self.messages.get(slot) {
            Some(Some((stored, text))) if *stored == code => Some(text),
            _ => None,
        }
    }
}

/// The error class of `code`: itself for predefined classes, the class bits of codes this
/// library returned, the registered class for dynamic codes; other values are returned as
/// they are.
pub fn class_of(code: c_int) -> c_int {
    error_class(code).unwrap_or(code)
}

/// `MPI_Error_class`, with validation.
pub fn error_class(code: c_int) -> MpiResult<c_int> {
    let st = state();
    let class = if code >= FIRST_DYNAMIC_CODE {
        st.dynamic.get(&code).map(|d| d.class)
    } else if code <= CLASS_MASK || code == MPI_ERR_LASTCODE {
        class_text(code).is_some().then_some(code)
    } else {
        st.returned_class(code)
    };
    class.ok_or_else(|| MpiError::new(MPI_ERR_ARG, format!("invalid error code (errorcode={code})")))
}

/// `MPI_Error_string`: for a code returned by a failure, its message while it is kept, else
/// the generic text of its class; for a class, the generic text. Unknown codes get a text
/// that says so.
pub fn error_string(code: c_int, out: &mut String) {
    out.clear();
    let st = state();
    if code >= FIRST_DYNAMIC_CODE {
        match st.dynamic.get(&code) {
            Some(d) => out.push_str(d.text.as_deref().unwrap_or("")),
            None => out.push_str(&format!("Unknown error code {code}")),
        }
        return;
    }
    if code > CLASS_MASK && code != MPI_ERR_LASTCODE {
        match st.returned_class(code) {
            Some(class) => out.push_str(st.message_of(code).unwrap_or(class_text(class).unwrap_or(""))),
            None => out.push_str(&format!("Unknown error code {code}")),
        }
        return;
    }
    match class_text(code) {
        Some(t) => out.push_str(t),
        None => out.push_str(&format!("Unknown error code {code}")),
    }
}

/// `MPI_Add_error_class`.
pub fn add_error_class() -> MpiResult<c_int> {
    let mut st = state();
    let class = st.next_dynamic;
    if class == c_int::MAX {
        return err(MPI_ERR_OTHER, "no more error classes or codes can be created");
    }
    st.next_dynamic += 1;
    st.last_used = class;
    st.dynamic.insert(class, DynamicCode { class, text: None });
    Ok(class)
}

/// `MPI_Add_error_code`: a new code of `class` (predefined or dynamic).
pub fn add_error_code(class: c_int) -> MpiResult<c_int> {
    let mut st = state();
    let class_ok = match st.dynamic.get(&class) {
        Some(d) => d.class == class,
        None => class != MPI_SUCCESS && class < FIRST_DYNAMIC_CODE && class_text(class).is_some(),
    };
    if !class_ok {
        return err(MPI_ERR_ARG, format!("invalid error class (errorclass={class})"));
    }
    let code = st.next_dynamic;
    if code == c_int::MAX {
        return err(MPI_ERR_OTHER, "no more error classes or codes can be created");
    }
    st.next_dynamic += 1;
    st.last_used = code;
    st.dynamic.insert(code, DynamicCode { class, text: None });
    Ok(code)
}

/// `MPI_Add_error_string`: only dynamic classes and codes take strings.
pub fn add_error_string(code: c_int, text: &str) -> MpiResult {
    if text.len() >= MPI_MAX_ERROR_STRING as usize {
        return err(MPI_ERR_ARG, format!("error string is {} bytes, longer than MPI_MAX_ERROR_STRING-1", text.len()));
    }
    match state().dynamic.get_mut(&code) {
        Some(d) => {
            d.text = Some(text.to_string());
            Ok(())
        }
        None => err(MPI_ERR_ARG, format!("invalid error code (errorcode={code}): not a user-defined code")),
    }
}

/// `MPIX_Delete_error_class`: the class must have no codes left.
pub fn delete_error_class(class: c_int) -> MpiResult {
    let mut st = state();
    match st.dynamic.get(&class) {
        Some(d) if d.class == class => {}
        _ => {
            return err(MPI_ERR_ARG, format!("invalid error class (errorclass={class}): not user-defined"));
        }
    }
    if st.dynamic.iter().any(|(k, d)| *k != class && d.class == class) {
        return err(MPI_ERR_ARG, format!("error class {class} still has error codes"));
    }
    st.dynamic.remove(&class);
    Ok(())
}

/// `MPIX_Delete_error_code`.
pub fn delete_error_code(code: c_int) -> MpiResult {
    let mut st = state();
    match st.dynamic.get(&code) {
        Some(d) if d.class != code => {
            st.dynamic.remove(&code);
            Ok(())
        }
        _ => err(MPI_ERR_ARG, format!("invalid error code (errorcode={code}): not user-defined")),
    }
}

/// `MPIX_Delete_error_string`.
pub fn delete_error_string(code: c_int) -> MpiResult {
    match state().dynamic.get_mut(&code) {
        Some(d) => {
            d.text = None;
            Ok(())
        }
        None => err(MPI_ERR_ARG, format!("invalid error code (errorcode={code}): not user-defined")),
    }
}

/// The value of the `MPI_LASTUSEDCODE` attribute.
pub fn last_used_code() -> c_int {
    state().last_used
}

/// The generic text of every error class of MPICH's ABI, `None` for values that are none.
pub fn class_text(class: c_int) -> Option<&'static str> {
    Some(match class {
        MPI_SUCCESS => "No MPI error",
        MPI_ERR_BUFFER => "Invalid buffer pointer",
        MPI_ERR_COUNT => "Invalid count argument",
        MPI_ERR_TYPE => "Invalid datatype argument",
        MPI_ERR_TAG => "Invalid tag argument",
        MPI_ERR_COMM => "Invalid communicator",
        MPI_ERR_RANK => "Invalid rank",
        MPI_ERR_ROOT => "Invalid root",
        MPI_ERR_GROUP => "Invalid group",
        MPI_ERR_OP => "Invalid reduce operation",
        MPI_ERR_TOPOLOGY => "Invalid topology",
        MPI_ERR_DIMS => "Invalid dimension argument",
        MPI_ERR_ARG => "Invalid argument",
        MPI_ERR_UNKNOWN => "Unknown error",
        MPI_ERR_TRUNCATE => "Message truncated",
        MPI_ERR_OTHER => "Other MPI error",
        MPI_ERR_INTERN => "Internal MPI error",
        MPI_ERR_IN_STATUS => "See the MPI_ERROR field in MPI_Status for the error code",
        MPI_ERR_PENDING => "Pending request (no error)",
        MPI_ERR_REQUEST => "Invalid request",
        MPI_ERR_ACCESS => "Permission denied",
        MPI_ERR_AMODE => "Invalid file access mode",
        MPI_ERR_BAD_FILE => "Invalid file name",
        MPI_ERR_CONVERSION => "An error occurred in a user-supplied data conversion function",
        MPI_ERR_DUP_DATAREP => "Data representation identifier is already defined",
        MPI_ERR_FILE_EXISTS => "File exists",
        MPI_ERR_FILE_IN_USE => "File operation could not be completed, the file is in use",
        MPI_ERR_FILE => "Invalid file handle",
        MPI_ERR_INFO => "Invalid info object",
        MPI_ERR_INFO_KEY => "Invalid info key",
        MPI_ERR_INFO_VALUE => "Invalid info value",
        MPI_ERR_INFO_NOKEY => "Info key is not defined",
        MPI_ERR_IO => "Other I/O error",
        MPI_ERR_NAME => "Invalid service name",
        MPI_ERR_NO_MEM => "Memory allocation failed",
        MPI_ERR_NOT_SAME => "Objects are not identical",
        MPI_ERR_NO_SPACE => "Not enough space for the file",
        MPI_ERR_NO_SUCH_FILE => "File does not exist",
        MPI_ERR_PORT => "Invalid port",
        MPI_ERR_QUOTA => "Quota exceeded",
        MPI_ERR_READ_ONLY => "Read-only file or file system",
        MPI_ERR_SERVICE => "Invalid service",
        MPI_ERR_SPAWN => "Error spawning processes",
        MPI_ERR_UNSUPPORTED_DATAREP => "Unsupported data representation",
        MPI_ERR_UNSUPPORTED_OPERATION => "Operation not supported",
        MPI_ERR_WIN => "Invalid window",
        MPI_ERR_BASE => "Invalid base address",
        MPI_ERR_LOCKTYPE => "Invalid lock type",
        MPI_ERR_KEYVAL => "Invalid keyval",
        MPI_ERR_RMA_CONFLICT => "Conflicting accesses to window",
        MPI_ERR_RMA_SYNC => "Wrong synchronization of RMA calls",
        MPI_ERR_SIZE => "Invalid size argument",
        MPI_ERR_DISP => "Invalid displacement argument",
        MPI_ERR_ASSERT => "Invalid assert argument",
        MPI_ERR_RMA_RANGE => "Target memory is not part of the window",
        MPI_ERR_RMA_ATTACH => "Memory cannot be attached to the window",
        MPI_ERR_RMA_SHARED => "Memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "Wrong window flavor for this operation",
        MPI_T_ERR_MEMORY => "Out of memory (tool interface)",
        MPI_T_ERR_NOT_INITIALIZED => "The tool interface is not initialized",
        MPI_T_ERR_CANNOT_INIT => "The tool interface cannot be initialized",
        MPI_T_ERR_INVALID_INDEX => "Invalid tool-interface variable index",
        MPI_T_ERR_INVALID_ITEM => "Invalid item index of a tool-interface enumeration",
        MPI_T_ERR_INVALID_HANDLE => "Invalid tool-interface handle",
        MPI_T_ERR_OUT_OF_HANDLES => "No more tool-interface handles available",
        MPI_T_ERR_OUT_OF_SESSIONS => "No more tool-interface sessions available",
        MPI_T_ERR_INVALID_SESSION => "Invalid tool-interface session",
        MPI_T_ERR_CVAR_SET_NOT_NOW => "The control variable cannot be set at this moment",
        MPI_T_ERR_CVAR_SET_NEVER => "The control variable cannot be set until the end of execution",
        MPI_T_ERR_PVAR_NO_STARTSTOP => "The performance variable cannot be started or stopped",
        MPI_T_ERR_PVAR_NO_WRITE => "The performance variable cannot be written or reset",
        MPI_T_ERR_PVAR_NO_ATOMIC => "The performance variable cannot be read and reset atomically",
        MPI_T_ERR_INVALID_NAME => "Invalid tool-interface variable or category name",
        MPI_T_ERR_INVALID => "Invalid use of the tool interface",
        MPI_ERR_SESSION => "Invalid session",
        MPI_ERR_PROC_ABORTED => "A process taking part in the operation aborted",
        MPI_ERR_VALUE_TOO_LARGE => "A value is too large to be stored in the output argument",
        MPI_T_ERR_NOT_SUPPORTED => "The tool-interface operation is not supported",
        MPICH_ERR_FIRST_MPIX => "First MPICH extension error class (a marker, not an error)",
        MPIX_ERR_PROC_FAILED => "A process taking part in the operation failed",
        MPIX_ERR_PROC_FAILED_PENDING => "A process failed; the request remains pending",
        MPIX_ERR_REVOKED => "The communication object was revoked",
        MPIX_ERR_EAGAIN => "Resource temporarily unavailable; try again",
        MPIX_ERR_NOREQ => "Out of request objects",
        MPI_ERR_LASTCODE => "Last predefined error code (a marker, not an error)",
        _ => return None,
    })
}

/// Serialises unit tests that change the handlers of the predefined communicators.
#[cfg(test)]
pub(crate) static TEST_SERIAL: Mutex<()> = Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_class_in_the_abi_table_has_a_text() {
        let tsv = include_str!("abi/data/mpich-abi.tsv");
        let mut n = 0;
        for line in tsv.lines().skip(2) {
            let cols: Vec<&str> = line.split('\t').collect();
            if cols.len() > 3 && cols[1] == "error-class" {
                let v: c_int = cols[3].parse().unwrap();
                let t = class_text(v).unwrap_or_else(|| panic!("no text for {} = {v}", cols[0]));
                assert!(!t.is_empty());
                n += 1;
            }
        }
        assert!(n >= 80, "only {n} error classes in the table");
        assert_eq!(class_text(54), None, "MPICH has no class 54");
    }

    #[test]
    fn user_errhandler_handles_are_direct_errhandler_handles() {
        let h = user_handle(0) as u32;
        assert_eq!(h >> 30, 0b10, "DIRECT kind");
        assert_eq!((h >> 26) & 0xf, 5, "ERRHANDLER object");
        assert_eq!(h, 0x9400_0000);
        assert_eq!(user_index(user_handle(7)), Some(7));
        assert_eq!(user_index(MPI_ERRORS_RETURN), None);
        assert_eq!(user_index(MPI_ERRHANDLER_NULL), None);
    }

    unsafe extern "C" fn noop(_: *mut c_int, _: *mut c_int) {}

    fn noop_handler() -> unsafe extern "C" fn(*mut c_int, *mut c_int, ...) {
        // SAFETY: only stored and compared, never called, so the variadic shape is not used.
        unsafe {
            std::mem::transmute::<
                unsafe extern "C" fn(*mut c_int, *mut c_int),
                unsafe extern "C" fn(*mut c_int, *mut c_int, ...),
            >(noop)
        }
    }

    #[test]
    fn user_handlers_are_reference_counted() {
        let eh = create(HandlerKind::Comm, noop_handler()).unwrap();
        assert!(check(eh, HandlerKind::Comm).is_ok());
        assert_eq!(check(eh, HandlerKind::Win).unwrap_err().code, MPI_ERR_ARG);
        // A comm that is not world/self so other tests' settings do not interfere.
        let comm = 0x8400_0123_u32 as c_int;
        set_comm_errhandler(comm, eh);
        free(eh).unwrap();
        // Still attached: the handler stays alive.
        assert!(check(eh, HandlerKind::Comm).is_ok());
        let got = get_comm_errhandler(comm);
        assert_eq!(got, eh);
        free(got).unwrap();
        on_comm_free(comm);
        assert_eq!(check(eh, HandlerKind::Comm).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(free(eh).unwrap_err().code, MPI_ERR_ARG);
        assert!(free(MPI_ERRORS_RETURN).is_ok());
    }

    #[test]
    fn window_and_file_handlers() {
        let win = 0xa000_0123_u32 as c_int;
        assert_eq!(get_win_errhandler(win), MPI_ERRORS_ARE_FATAL);
        let eh = create(HandlerKind::Win, noop_handler()).unwrap();
        set_win_errhandler(win, eh);
        free(eh).unwrap();
        let got = get_win_errhandler(win);
        assert_eq!(got, eh);
        free(got).unwrap();
        on_win_free(win);
        assert_eq!(check(eh, HandlerKind::Win).unwrap_err().code, MPI_ERR_ARG, "released with the window");
        let _serial = TEST_SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        assert_eq!(get_file_errhandler(0), MPI_ERRORS_RETURN, "files return errors by default");
        set_file_errhandler(0, MPI_ERRORS_RETURN);
        let code = raise_on_file("MPI_File_open", std::ptr::null_mut(), MpiError::new(MPI_ERR_IO, "no such dir"));
        assert_eq!(error_class(code).unwrap(), MPI_ERR_IO);
    }

    #[test]
    fn dup_inherits_the_handler() {
        let parent = 0x8400_0200_u32 as c_int;
        let child = 0x8400_0201_u32 as c_int;
        set_comm_errhandler(parent, MPI_ERRORS_RETURN);
        on_comm_dup(parent, child);
        assert_eq!(get_comm_errhandler(child), MPI_ERRORS_RETURN);
        on_comm_free(child);
        on_comm_free(parent);
        assert_eq!(get_comm_errhandler(child), MPI_ERRORS_ARE_FATAL);
    }

    #[test]
    fn dynamic_classes_codes_and_strings() {
        let class = add_error_class().unwrap();
        assert!(class > MPI_ERR_LASTCODE);
        let code = add_error_code(class).unwrap();
        assert!(code > class);
        assert!(last_used_code() >= code);
        assert_eq!(error_class(code).unwrap(), class);
        assert_eq!(error_class(class).unwrap(), class);
        let mut s = String::new();
        error_string(code, &mut s);
        assert_eq!(s, "");
        add_error_string(code, "my error").unwrap();
        error_string(code, &mut s);
        assert_eq!(s, "my error");
        assert_eq!(add_error_string(MPI_ERR_COUNT, "x").unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(add_error_string(code, &"x".repeat(600)).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(delete_error_class(class).unwrap_err().code, MPI_ERR_ARG);
        delete_error_string(code).unwrap();
        delete_error_code(code).unwrap();
        delete_error_class(class).unwrap();
        assert_eq!(error_class(code).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(add_error_code(54).unwrap_err().code, MPI_ERR_ARG);
        let code2 = add_error_code(MPI_ERR_COUNT).unwrap();
        assert_eq!(error_class(code2).unwrap(), MPI_ERR_COUNT);
    }

    #[test]
    fn returned_errors_keep_their_message() {
        let _serial = TEST_SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        set_comm_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        let code = raise("MPI_Send", Some(MPI_COMM_SELF), MpiError::new(MPI_ERR_TAG, "invalid tag argument (tag=-5)"));
        let later = raise("MPI_Recv", Some(MPI_COMM_SELF), MpiError::new(MPI_ERR_TAG, "invalid tag argument (tag=-6)"));
        assert_ne!(code, later, "each failure has a code of its own");
        assert_eq!(error_class(code).unwrap(), MPI_ERR_TAG);
        assert_eq!(error_class(later).unwrap(), MPI_ERR_TAG);
        let mut s = String::new();
        error_string(code, &mut s);
        assert_eq!(s, "MPI_Send: invalid tag argument (tag=-5)");
        error_string(later, &mut s);
        assert_eq!(s, "MPI_Recv: invalid tag argument (tag=-6)");
        error_string(MPI_ERR_TAG, &mut s);
        assert_eq!(s, "Invalid tag argument", "a class gives its generic text");
        // Once the ring has moved on, the old code still has its class and the class's text.
        for _ in 0..MESSAGE_RING {
            raise("MPI_Send", Some(MPI_COMM_SELF), MpiError::new(MPI_ERR_COUNT, "invalid count"));
        }
        assert_eq!(error_class(code).unwrap(), MPI_ERR_TAG);
        error_string(code, &mut s);
        assert_eq!(s, "Invalid tag argument");
        // Codes the program supplies, user codes and MPI_ERR_IN_STATUS come back unchanged.
        assert_eq!(raise("f", Some(MPI_COMM_SELF), MpiError::supplied(MPI_ERR_OTHER, "x")), MPI_ERR_OTHER);
        assert_eq!(raise("f", Some(MPI_COMM_SELF), MpiError::new(MPI_ERR_IN_STATUS, "x")), MPI_ERR_IN_STATUS);
        let user = add_error_code(MPI_ERR_COUNT).unwrap();
        assert_eq!(raise("f", Some(MPI_COMM_SELF), MpiError::new(user, "x")), user);
        assert_eq!(raise("f", Some(MPI_COMM_SELF), MpiError::new(later, "x")), later);
        on_comm_free(MPI_COMM_SELF);
    }

    #[test]
    fn values_that_are_no_code_are_rejected() {
        for bad in [-1, 54, 106, 127, CLASS_MASK + 1, (MAX_SEQUENCE as c_int - 1) << CLASS_BITS | MPI_ERR_RANK] {
            assert_eq!(error_class(bad).unwrap_err().code, MPI_ERR_ARG, "{bad}");
            let mut s = String::new();
            error_string(bad, &mut s);
            assert!(s.starts_with("Unknown error code"), "{bad}: {s}");
        }
        assert_eq!(error_class(MPI_ERR_LASTCODE).unwrap(), MPI_ERR_LASTCODE);
        assert_eq!(error_class(MPI_SUCCESS).unwrap(), MPI_SUCCESS);
    }

    #[test]
    fn sequence_numbers_wrap_below_lastcode() {
        let mut st = State { next_sequence: MAX_SEQUENCE, ..State::new() };
        let last = st.new_code(MPIX_ERR_NOREQ, "last");
        assert!(last > 0 && last < MPI_ERR_LASTCODE, "{last:#x}");
        assert_eq!(st.returned_class(last), Some(MPIX_ERR_NOREQ));
        let first = st.new_code(MPI_ERR_RANK, "first again");
        assert_eq!(first, (1 << CLASS_BITS) | MPI_ERR_RANK);
        assert_eq!(st.message_of(first), Some("first again"));
        assert_eq!(st.message_of(last), Some("last"));
    }
}
