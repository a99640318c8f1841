//! Parser for `src/abi/mpi.decl` and the C-to-Rust type mapping of the ABI.
//!
//! build.rs includes this file with `#[path]` to generate the entry points and the header; the
//! library compiles it only for its unit tests, so items unused by one of the two are expected.
#![allow(dead_code)]

use std::collections::BTreeSet;

/// A C type as written in a declaration: a base name, whether the pointee is `const`, and how
/// many levels of pointer (`*` or a trailing `[]`) wrap it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CType {
    pub base: String,
    pub const_base: bool,
    pub pointers: usize,
    /// `int ranges[][3]`: a pointer to arrays of this many elements.
    pub inner_array: Option<usize>,
}

/// One parameter: its type and its name (generated `argN` when the declaration has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub ty: CType,
    pub name: String,
    /// The parameter exactly as written in C, for the header.
    pub c_text: String,
}

/// A function prototype or a callback typedef.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Func {
    pub name: String,
    pub ret: CType,
    pub params: Vec<Param>,
    pub variadic: bool,
    /// The declaration as written in the decl file, without the trailing `;`.
    pub c_text: String,
}

/// Everything the decl file holds.
#[derive(Debug, Default)]
pub struct Decls {
    /// `typedef RET (NAME)(PARAMS);`: callback function types.
    pub callbacks: Vec<Func>,
    /// `typedef TARGET ALIAS;` pairs.
    pub aliases: Vec<(String, String)>,
    /// `RET MPI_X(PARAMS);`: exported functions.
    pub functions: Vec<Func>,
}

/// Words that qualify or spell a base type; a further word after them is a parameter name.
const TYPE_WORDS: &[&str] = &["const", "unsigned", "signed", "long", "short", "struct"];

/// Parses one C type with an optional trailing name, e.g. `const int recvcounts[]`.
pub fn parse_param(text: &str, index: usize) -> Result<Param, String> {
    let text = text.trim();
    let mut rest = text.to_string();
    let mut pointers = 0;
    let mut inner_array = None;
    // Array suffixes: `[]` decays to a pointer; `[][N]` is a pointer to arrays of N.
    while rest.ends_with(']') {
        let open = rest.rfind('[').ok_or_else(|| format!("unbalanced [] in `{text}`"))?;
        let size = rest[open + 1..rest.len() - 1].trim().to_string();
        rest.truncate(open);
        rest = rest.trim_end().to_string();
        if size.is_empty() {
            pointers += 1;
        } else {
            let n = size.parse::<usize>().map_err(|_| format!("array size in `{text}`"))?;
            if inner_array.is_some() {
                return Err(format!("unsupported array shape in `{text}`"));
            }
            inner_array = Some(n);
        }
    }
    pointers += rest.matches('*').count();
    let spaced = rest.replace('*', " ");
    let mut words: Vec<&str> = spaced.split_whitespace().collect();
    let const_base = words.first() == Some(&"const");
    words.retain(|w| *w != "const");
    let type_words = words.iter().filter(|w| !TYPE_WORDS.contains(w)).count();
    let name = if type_words >= 2 { words.pop().map(str::to_string).unwrap() } else { format!("arg{index}") };
    if words.is_empty() {
        return Err(format!("no type in `{text}`"));
    }
    let base = words.join(" ");
    Ok(Param { ty: CType { base, const_base, pointers, inner_array }, name, c_text: text.to_string() })
}

/// Parses a parameter list (the text between the parentheses).
fn parse_params(list: &str) -> Result<(Vec<Param>, bool), String> {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return Ok((Vec::new(), false));
    }
    let mut params = Vec::new();
    let mut variadic = false;
    for (i, part) in list.split(',').enumerate() {
        let part = part.trim();
        if part == "..." {
            variadic = true;
            continue;
        }
        params.push(parse_param(part, i)?);
    }
    Ok((params, variadic))
}

/// Parses a return type (`int`, `double`, `MPI_Aint`, `MPI_File`, ...).
fn parse_ret(text: &str) -> Result<CType, String> {
    let p = parse_param(text, 0)?;
    if !p.name.starts_with("arg") {
        return Err(format!("return type `{text}` parsed with a name"));
    }
    Ok(p.ty)
}

/// Parses the whole decl file. Lines are declarations ending in `;`; `#` starts a comment line.
pub fn parse_decls(text: &str) -> Result<Decls, String> {
    let mut d = Decls::default();
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let ctx = |e: String| format!("mpi.decl line {}: {e}", lineno + 1);
        let stmt = line.strip_suffix(';').ok_or_else(|| ctx("missing `;`".into()))?;
        if let Some(rest) = stmt.strip_prefix("typedef ") {
            if let Some(open) = rest.find("(") {
                // typedef RET (NAME)(PARAMS)
                let ret = parse_ret(&rest[..open]).map_err(ctx)?;
                let close = rest[open..].find(')').ok_or_else(|| ctx("bad typedef".into()))? + open;
                let name = rest[open + 1..close].trim().to_string();
                let list = rest[close + 1..].trim();
                let list = list
                    .strip_prefix('(')
                    .and_then(|l| l.strip_suffix(')'))
                    .ok_or_else(|| ctx("bad typedef parameter list".into()))?;
                let (params, variadic) = parse_params(list).map_err(ctx)?;
                d.callbacks.push(Func { name, ret, params, variadic, c_text: stmt.to_string() });
            } else {
                let words: Vec<&str> = rest.split_whitespace().collect();
                if words.len() != 2 {
                    return Err(ctx(format!("unsupported typedef `{stmt}`")));
                }
                d.aliases.push((words[0].to_string(), words[1].to_string()));
            }
            continue;
        }
        let open = stmt.find('(').ok_or_else(|| ctx("no parameter list".into()))?;
        let list =
            stmt[open + 1..].strip_suffix(')').ok_or_else(|| ctx("parameter list does not end the line".into()))?;
        let head = &stmt[..open];
        let name_start = head.rfind([' ', '*']).map_or(0, |i| i + 1);
        let name = head[name_start..].to_string();
        let ret = parse_ret(&head[..name_start]).map_err(ctx)?;
        let (params, variadic) = parse_params(list).map_err(ctx)?;
        d.functions.push(Func { name, ret, params, variadic, c_text: stmt.to_string() });
    }
    Ok(d)
}

/// Rust keywords that C parameter names may collide with.
const RUST_KEYWORDS: &[&str] = &[
    "as", "box", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn", "for", "gen",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static",
    "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "try", "yield",
    "macro", "override", "priv", "typeof", "unsized", "virtual", "abstract", "become", "do", "final",
];

/// A C parameter name usable in Rust.
pub fn rust_ident(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) { format!("{name}_") } else { name.to_string() }
}

/// The Rust spelling of a C base type, or an error for a type the ABI does not use.
pub fn rust_base(base: &str, callbacks: &[String]) -> Result<String, String> {
    let s = match base {
        "int" => "c_int",
        "double" => "f64",
        "char" => "c_char",
        "void" => "c_void",
        "MPI_Comm"
        | "MPI_Datatype"
        | "MPI_Group"
        | "MPI_Op"
        | "MPI_Errhandler"
        | "MPI_Win"
        | "MPI_Info"
        | "MPI_Request"
        | "MPI_Message"
        | "MPI_Session"
        | "MPI_Fint"
        | "MPI_Aint"
        | "MPI_Offset"
        | "MPI_Count"
        | "MPI_Status"
        | "MPI_File"
        | "MPI_F08_status"
        | "MPIX_Grequest_class"
        | "MPI_T_enum"
        | "MPI_T_cvar_handle"
        | "MPI_T_pvar_handle"
        | "MPI_T_pvar_session"
        | "MPI_T_event_registration"
        | "MPI_T_event_instance"
        | "MPI_T_cb_safety"
        | "MPI_T_source_order" => base,
        _ if callbacks.iter().any(|c| c == base) => base,
        _ => return Err(format!("no Rust mapping for C type `{base}`")),
    };
    Ok(s.to_string())
}

/// The Rust type of a C parameter or return type.
///
/// A callback type (`MPI_User_function *fn`, or a bare function type, which C adjusts to a
/// pointer) maps to the Rust alias of the same name, which is already a nullable fn pointer.
pub fn rust_type(ty: &CType, callbacks: &[String]) -> Result<String, String> {
    let base = rust_base(&ty.base, callbacks)?;
    let is_callback = callbacks.contains(&ty.base);
    let mut pointers = ty.pointers;
    if is_callback {
        // The function type itself decays to the pointer the alias already is.
        pointers = pointers.saturating_sub(1);
    }
    let mut s = base;
    if let Some(n) = ty.inner_array {
        s = format!("[{s}; {n}]");
    }
    for level in 0..pointers {
        // `const` qualifies the innermost pointee only.
        let qual = if level == 0 && ty.const_base && !is_callback { "const" } else { "mut" };
        s = format!("*{qual} {s}");
    }
    Ok(s)
}

/// The Rust `fn` pointer type of a callback typedef, wrapped in `Option` so C's NULL is valid.
pub fn rust_callback_type(f: &Func, callbacks: &[String]) -> Result<String, String> {
    let mut args = Vec::new();
    for p in &f.params {
        args.push(rust_type(&p.ty, callbacks)?);
    }
    if f.variadic {
        args.push("...".to_string());
    }
    let ret = rust_return(&f.ret, callbacks)?;
    Ok(format!("Option<unsafe extern \"C\" fn({}){ret}>", args.join(", ")))
}

/// ` -> T` for a non-void return, empty for `void`.
pub fn rust_return(ty: &CType, callbacks: &[String]) -> Result<String, String> {
    if ty.base == "void" && ty.pointers == 0 {
        Ok(String::new())
    } else {
        Ok(format!(" -> {}", rust_type(ty, callbacks)?))
    }
}

/// A function of the tools interface (`MPI_T_*`): it returns its error class itself and
/// invokes no error handler (MPI-4.1 15.3.9), so its entry dispatches through
/// `entry::call_tool`.
pub fn is_tool(f: &Func) -> bool {
    f.name.starts_with("MPI_T_")
}

/// The first by-value `MPI_Comm` parameter: the communicator whose error handler applies.
pub fn comm_param(f: &Func) -> Option<&Param> {
    f.params.iter().find(|p| p.ty.base == "MPI_Comm" && p.ty.pointers == 0)
}

/// Functions without a communicator whose errors go to the handler of their `MPI_Session`
/// argument.
pub fn session_param(f: &Func) -> Option<&Param> {
    f.params.iter().find(|p| p.ty.base == "MPI_Session" && p.ty.pointers == 0)
}

/// The window whose error handler gets the errors of `f`, as a Rust expression over its
/// parameters: its by-value `MPI_Win` (MPI_Win_free: the handle it points at), for
/// functions without a communicator.
pub fn win_target(f: &Func) -> Option<String> {
    if comm_param(f).is_some() {
        return None;
    }
    if f.name == "MPI_Win_free" {
        let p = f.params.first()?;
        return Some(format!(
            "unsafe {{ crate::abi::entry::handle_at({}, crate::abi::consts::MPI_WIN_NULL) }}",
            rust_ident(&p.name)
        ));
    }
    let p = f.params.iter().find(|p| p.ty.base == "MPI_Win" && p.ty.pointers == 0)?;
    Some(rust_ident(&p.name))
}

/// The file whose error handler gets the errors of `f` (the `MPI_File_*` functions but
/// those that manage error handlers, whose errors MPICH reports on MPI_COMM_WORLD): its
/// by-value `MPI_File`, else MPI_FILE_NULL, whose handler is the default for files
/// (MPI_File_open, MPI_File_delete, MPI_File_close, and MPI_Register_datarep, as MPI-4.1
/// 14.5.3 says).
pub fn file_target(f: &Func) -> Option<String> {
    let file_function = f.name.starts_with("MPI_File_") || f.name.starts_with("MPI_Register_datarep");
    if !file_function || f.name.ends_with("_errhandler") {
        return None;
    }
    Some(match f.params.iter().find(|p| p.ty.base == "MPI_File" && p.ty.pointers == 0) {
        Some(p) => rust_ident(&p.name),
        None => "core::ptr::null_mut::<crate::abi::ctypes::ADIOI_FileD>()".to_string(),
    })
}

/// Functions whose errors go to the handler they take as an argument (MPI-4: the handler
/// "is also invoked if the function encounters an error").
pub fn errhandler_arg_param(f: &Func) -> Option<&Param> {
    const TAKE_HANDLER: &[&str] =
        &["MPI_Session_init", "MPI_Comm_create_from_group", "MPI_Intercomm_create_from_groups"];
    if !TAKE_HANDLER.contains(&f.name.as_str()) {
        return None;
    }
    f.params.iter().find(|p| p.ty.base == "MPI_Errhandler" && p.ty.pointers == 0)
}

/// What an implementing module provides for `MPI_X`: the module, whether the Rust function
/// is `unsafe` and returns `MpiResult` (int-returning MPI functions) or a plain value, and its
/// parameters as (name, Rust type text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impl {
    pub module: String,
    pub is_unsafe: bool,
    pub returns_result: bool,
    pub params: Vec<(String, String)>,
}

/// Finds `pub fn MPI_X(` / `pub unsafe fn MPI_X(` (and `MPIX_`) at the start of a line of a
/// module's source; returns each name with its `Impl` (`module` left empty).
pub fn scan_impls(source: &str) -> Vec<(String, Impl)> {
    let mut found = Vec::new();
    let lines: Vec<&str> = source.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let (rest, is_unsafe) = if let Some(r) = t.strip_prefix("pub unsafe fn ") {
            (r, true)
        } else if let Some(r) = t.strip_prefix("pub fn ") {
            (r, false)
        } else {
            continue;
        };
        if !(rest.starts_with("MPI_") || rest.starts_with("MPIX_")) {
            continue;
        }
        let Some(open) = rest.find('(') else { continue };
        let name = rest[..open].to_string();
        // The signature runs until the body's `{`, possibly over several lines.
        let mut sig = String::new();
        for l in &lines[i..] {
            sig.push_str(l);
            sig.push(' ');
            if l.contains('{') {
                break;
            }
        }
        let sig = &sig[..sig.find('{').unwrap_or(sig.len())];
        let returns_result = sig.contains("MpiResult");
        let params = sig.find('(').map(|o| impl_params(&sig[o + 1..])).unwrap_or_default();
        found.push((name, Impl { module: String::new(), is_unsafe, returns_result, params }));
    }
    found
}

/// The (name, type) pairs of a Rust parameter list, read up to its closing parenthesis.
fn impl_params(list: &str) -> Vec<(String, String)> {
    let (mut depth, mut items, mut cur) = (0i32, Vec::new(), String::new());
    for c in list.chars() {
        match c {
            '(' | '<' | '[' => depth += 1,
            ')' if depth == 0 => break,
            // The `>` of a `->` inside a fn-pointer type closes nothing.
            '>' if cur.ends_with('-') => {}
            ')' | '>' | ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    items.push(cur);
    items
        .iter()
        .filter_map(|p| {
            let (n, t) = p.split_once(':')?;
            Some((n.trim().to_string(), t.split_whitespace().collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

// ----- families: one impl serving several C functions (see src/abi/family.rs) -----

/// The parameter types by which one implementation serves a family (src/abi/family.rs).
const FAMILY_TYPES: [&str; 6] = ["Mode", "SendMode", "CArray", "Width", "FileForm", "SplitEnd"];

/// Whether `imp` is a family implementation (it takes one of the family types).
pub fn is_family(imp: &Impl) -> bool {
    imp.params.iter().any(|(_, ty)| FAMILY_TYPES.contains(&ty.as_str()))
}

/// The forms of a function whose implementation takes a `Mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Blocking,
    Start,
    Init,
}

/// One C function of a family: its name and what the family parameters are for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub form: Form,
    pub large: bool,
    /// The `SendMode` variant, or "" when the family has no send modes.
    pub send_mode: &'static str,
    /// Whether the family has the three forms (its impl takes a `Mode`).
    pub has_forms: bool,
    /// The `FileForm` or `SplitEnd` variant, or "" outside the file families.
    pub file_form: &'static str,
}

impl Member {
    /// E.g. "nonblocking, int counts, Buffered send".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.has_forms {
            parts.push(
                match self.form {
                    Form::Blocking => "blocking",
                    Form::Start => "nonblocking",
                    Form::Init => "persistent",
                }
                .to_string(),
            );
        }
        let file = match self.file_form {
            "Blocking" => "blocking",
            "Start" => "nonblocking",
            "Collective" => "collective",
            "StartCollective" => "nonblocking collective",
            "Begin" => "split collective begin",
            "Explicit" => "end of an explicit-offset split collective",
            "Individual" => "end of an individual-pointer split collective",
            "Shared" => "end of an ordered split collective",
            _ => "",
        };
        if !file.is_empty() {
            parts.push(file.to_string());
        }
        parts.push(if self.large { "large counts" } else { "int counts" }.to_string());
        if !self.send_mode.is_empty() {
            parts.push(format!("{} send", self.send_mode));
        }
        parts.join(", ")
    }
}

/// The send modes: the blocking function's name and its `SendMode` variant.
const SEND_MODES: [(&str, &str); 4] =
    [("MPI_Send", "Standard"), ("MPI_Bsend", "Buffered"), ("MPI_Ssend", "Sync"), ("MPI_Rsend", "Ready")];

/// The functions a family implementation named `impl_name` may serve (declared or not):
/// `MPI_X` and `MPI_X_c`, times `MPI_IX` and `MPI_X_init` when it takes a `Mode`, times the
/// send modes when it takes a `SendMode`.
pub fn family_members(impl_name: &str, imp: &Impl) -> Vec<Member> {
    let takes = |ty: &str| imp.params.iter().any(|(_, t)| t == ty);
    let (base, widths) = match impl_name.strip_suffix("_c") {
        Some(base) => (base, vec![false, true]),
        None => (impl_name, vec![false]),
    };
    if takes("FileForm") || takes("SplitEnd") {
        return file_members(impl_name, base, &widths, takes("SplitEnd"));
    }
    let bases: Vec<(&str, &'static str)> = if takes("SendMode") {
        assert_eq!(base, "MPI_Send", "src/abi/{}.rs: only MPI_Send_c may take a SendMode", imp.module);
        SEND_MODES.to_vec()
    } else {
        vec![(base, "")]
    };
    let forms = if takes("Mode") { vec![Form::Blocking, Form::Start, Form::Init] } else { vec![Form::Blocking] };
    let mut members = Vec::new();
    for (base, send_mode) in bases {
        for &form in &forms {
            for &large in &widths {
                let stem = &base["MPI_".len()..];
                let name = match form {
                    Form::Blocking => base.to_string(),
                    Form::Start => format!("MPI_I{}{}", stem[..1].to_lowercase(), &stem[1..]),
                    Form::Init => format!("{base}_init"),
                };
                let name = if large { format!("{name}_c") } else { name };
                members.push(Member { name, form, large, send_mode, has_forms: forms.len() > 1, file_form: "" });
            }
        }
    }
    members
}

/// The members of a file data-access family (src/abi/family.rs): `base` is
/// `MPI_File_<dir><pos>` for a `FileForm` family, `MPI_File_<dir>_all_end` for a `SplitEnd`
/// one.
fn file_members(impl_name: &str, base: &str, widths: &[bool], end: bool) -> Vec<Member> {
    let bad = || {
        panic!(
            "{impl_name}: a file family is named MPI_File_<read|write>[_at|_shared][_c] or MPI_File_<read|write>_all_end"
        )
    };
    let stem = base.strip_prefix("MPI_File_").unwrap_or_else(bad);
    let forms: Vec<(&'static str, String)> = if end {
        let dir = stem.strip_suffix("_all_end").filter(|d| matches!(*d, "read" | "write")).unwrap_or_else(|| bad());
        vec![
            ("Explicit", format!("MPI_File_{dir}_at_all_end")),
            ("Individual", format!("MPI_File_{dir}_all_end")),
            ("Shared", format!("MPI_File_{dir}_ordered_end")),
        ]
    } else {
        let (dir, pos) = stem.split_once('_').map_or((stem, String::new()), |(d, p)| (d, format!("_{p}")));
        if !matches!(dir, "read" | "write") || !matches!(pos.as_str(), "" | "_at" | "_shared") {
            bad();
        }
        let coll = if pos == "_shared" { "_ordered".to_string() } else { format!("{pos}_all") };
        vec![
            ("Blocking", format!("MPI_File_{dir}{pos}")),
            ("Start", format!("MPI_File_i{dir}{pos}")),
            ("Collective", format!("MPI_File_{dir}{coll}")),
            ("StartCollective", format!("MPI_File_i{dir}{coll}")),
            ("Begin", format!("MPI_File_{dir}{coll}_begin")),
        ]
    };
    let mut members = Vec::new();
    for (file_form, name) in forms {
        for &large in widths {
            let name = if large { format!("{name}_c") } else { name.clone() };
            members.push(Member { name, form: Form::Blocking, large, send_mode: "", has_forms: false, file_form });
        }
    }
    members
}

/// The argument expressions with which member `m` (C prototype `f`) calls the family
/// implementation `imp` (the family parameters as `m` needs them, the others by name, `int`
/// scalars widened), and the C arguments it does not pass (the info of a persistent form).
pub fn member_args(f: &Func, m: &Member, imp: &Impl) -> Result<(Vec<String>, BTreeSet<String>), String> {
    let is_request_out = |p: &&Param| p.ty.base == "MPI_Request" && p.ty.pointers == 1 && !p.ty.const_base;
    let request = || match f.params.iter().rev().find(is_request_out) {
        Some(p) => Ok(rust_ident(&p.name)),
        None => Err("it has no MPI_Request * argument".to_string()),
    };
    let status = || match f.params.iter().rev().find(|p| p.ty.base == "MPI_Status" && p.ty.pointers == 1) {
        Some(p) => Ok(rust_ident(&p.name)),
        None => Err("it has no MPI_Status * argument".to_string()),
    };
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut args = Vec::new();
    for (name, ty) in &imp.params {
        let arg = match ty.as_str() {
            "FileForm" if m.file_form == "Begin" => "FileForm::Begin".to_string(),
            "FileForm" => {
                let out = if m.file_form.starts_with("Start") { request()? } else { status()? };
                used.insert(out.clone());
                format!("FileForm::{}({out})", m.file_form)
            }
            "SplitEnd" => format!("SplitEnd::{}", m.file_form),
            "Mode" if m.form == Form::Blocking => "Mode::Blocking".to_string(),
            "Mode" => {
                let request = request()?;
                let variant = if m.form == Form::Start { "Start" } else { "Init" };
                used.insert(request.clone());
                format!("Mode::{variant}({request})")
            }
            "SendMode" => format!("SendMode::{}", m.send_mode),
            "Width" => format!("Width::{}", if m.large { "Large" } else { "Int" }),
            _ => {
                let p = f.params.iter().find(|p| rust_ident(&p.name) == *name);
                let p = p.ok_or_else(|| format!("it has no argument `{name}`"))?;
                used.insert(name.clone());
                let (base, ptr) = (p.ty.base.as_str(), p.ty.pointers);
                if ty == "CArray" {
                    let variant = match (base, ptr) {
                        ("int", 1) => "Int",
                        ("MPI_Count" | "MPI_Aint", 1) => "Wide",
                        _ => return Err(format!("`{name}` is not an array of int, MPI_Count or MPI_Aint")),
                    };
                    let p = if p.ty.const_base { name.clone() } else { format!("{name}.cast_const()") };
                    format!("CArray::{variant}({p})")
                } else if base == "int" && ptr == 0 && matches!(ty.as_str(), "MPI_Count" | "MPI_Aint") {
                    format!("{name} as {ty}")
                } else {
                    name.clone()
                }
            }
        };
        args.push(arg);
    }
    // Every C argument reaches the implementation, except the info of a persistent form.
    let mut unused = BTreeSet::new();
    for p in &f.params {
        let n = rust_ident(&p.name);
        if !used.contains(&n) {
            if m.form == Form::Init && p.ty.base == "MPI_Info" && p.ty.pointers == 0 {
                unused.insert(n);
            } else {
                return Err(format!("argument `{n}` has no parameter of that name"));
            }
        }
    }
    Ok((args, unused))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cbs() -> Vec<String> {
        vec!["MPI_User_function".to_string(), "MPI_T_event_cb_function".to_string()]
    }

    #[test]
    fn parses_named_and_unnamed_params() {
        let p = parse_param("const int recvcounts[]", 0).unwrap();
        assert_eq!(p.name, "recvcounts");
        assert_eq!(p.ty, CType { base: "int".into(), const_base: true, pointers: 1, inner_array: None });
        let p = parse_param("void **", 3).unwrap();
        assert_eq!(p.name, "arg3");
        assert_eq!(p.ty.pointers, 2);
        let p = parse_param("MPI_Comm", 1).unwrap();
        assert_eq!(p.name, "arg1");
        let p = parse_param("int ranges[][3]", 0).unwrap();
        assert_eq!(p.ty.inner_array, Some(3));
        assert_eq!(p.ty.pointers, 1);
        let p = parse_param("char **array_of_argv[]", 0).unwrap();
        assert_eq!((p.ty.pointers, p.name.as_str()), (3, "array_of_argv"));
    }

    #[test]
    fn maps_c_types_to_rust() {
        let t = |s: &str| rust_type(&parse_param(s, 0).unwrap().ty, &cbs()).unwrap();
        assert_eq!(t("int count"), "c_int");
        assert_eq!(t("const void *buf"), "*const c_void");
        assert_eq!(t("char ***argv"), "*mut *mut *mut c_char");
        assert_eq!(t("const char *x[]"), "*mut *const c_char");
        assert_eq!(t("MPI_Status *status"), "*mut MPI_Status");
        assert_eq!(t("MPI_File fh"), "MPI_File");
        assert_eq!(t("int ranges[][3]"), "*mut [c_int; 3]");
        assert_eq!(t("MPI_User_function *user_fn"), "MPI_User_function");
        assert_eq!(t("MPI_T_event_cb_function event_cb_function"), "MPI_T_event_cb_function");
        assert!(rust_type(&parse_param("float x", 0).unwrap().ty, &cbs()).is_err());
    }

    #[test]
    fn parses_decl_lines() {
        let d = parse_decls(concat!(
            "# comment\n",
            "typedef void (MPI_Handler_function)(MPI_Comm *, int *, ...);\n",
            "typedef MPI_Handler_function MPI_Handler_fn;\n",
            "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);\n",
            "double MPI_Wtime(void);\n",
            "int MPI_Pcontrol(const int level, ...);\n",
        ))
        .unwrap();
        assert_eq!(d.callbacks.len(), 1);
        assert!(d.callbacks[0].variadic);
        assert_eq!(d.aliases, vec![("MPI_Handler_function".into(), "MPI_Handler_fn".into())]);
        let send = &d.functions[0];
        assert_eq!(send.name, "MPI_Send");
        assert_eq!(send.params.len(), 6);
        assert_eq!(comm_param(send).unwrap().name, "comm");
        assert_eq!(d.functions[1].ret.base, "double");
        assert!(d.functions[1].params.is_empty());
        assert!(d.functions[2].variadic);
        let cb = rust_callback_type(&d.callbacks[0], &["MPI_Handler_function".into()]).unwrap();
        assert_eq!(cb, "Option<unsafe extern \"C\" fn(*mut MPI_Comm, *mut c_int, ...)>");
    }

    /// An impl found in a source string (the name is split so that build.rs's own scan of
    /// this file finds nothing).
    fn one_impl(sig: &str) -> (String, Impl) {
        scan_impls(&format!("pub unsafe fn MPI{sig} -> MpiResult {{\n}}")).remove(0)
    }

    #[test]
    fn a_family_impl_serves_every_form_and_width() {
        let d = parse_decls(include_str!("mpi.decl")).unwrap();
        let func = |n: &str| d.functions.iter().find(|f| f.name == n).unwrap().clone();
        let (name, imp) = one_impl(
            "_Gatherv_c(sendbuf: *const c_void, sendcount: MPI_Count, sendtype: MPI_Datatype, \
             recvbuf: *mut c_void, recvcounts: CArray, displs: CArray, recvtype: MPI_Datatype, root: c_int, \
             comm: MPI_Comm, mode: Mode)",
        );
        assert!(is_family(&imp));
        let members = family_members(&name, &imp);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "MPI_Gatherv",
                "MPI_Gatherv_c",
                "MPI_Igatherv",
                "MPI_Igatherv_c",
                "MPI_Gatherv_init",
                "MPI_Gatherv_init_c"
            ]
        );
        let (args, unused) = member_args(&func("MPI_Igatherv"), &members[2], &imp).unwrap();
        assert_eq!(
            args.join(", "),
            "sendbuf, sendcount as MPI_Count, sendtype, recvbuf, CArray::Int(recvcounts), CArray::Int(displs), \
             recvtype, root, comm, Mode::Start(request)"
        );
        assert!(unused.is_empty());
        let (args, unused) = member_args(&func("MPI_Gatherv_init_c"), &members[5], &imp).unwrap();
        assert_eq!(args[4..6], ["CArray::Wide(recvcounts)", "CArray::Wide(displs)"]);
        assert_eq!(args[9], "Mode::Init(request)");
        assert_eq!(unused.into_iter().collect::<Vec<_>>(), ["info"]);
        assert_eq!(members[4].describe(), "persistent, int counts");

        // A C argument the impl does not take is a build error, not a silent stub.
        let (_, short) = one_impl("_Gatherv_c(sendbuf: *const c_void, mode: Mode)");
        assert!(member_args(&func("MPI_Gatherv"), &members[0], &short).unwrap_err().contains("sendcount"));
    }

    #[test]
    fn the_send_family_has_four_modes() {
        let (name, imp) = one_impl(
            "_Send_c(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, \
             comm: MPI_Comm, send_mode: SendMode, mode: Mode)",
        );
        let members = family_members(&name, &imp);
        assert_eq!(members.len(), 24);
        let ibsend = members.iter().find(|m| m.name == "MPI_Ibsend").unwrap();
        assert_eq!((ibsend.form, ibsend.send_mode, ibsend.large), (Form::Start, "Buffered", false));
        assert!(members.iter().any(|m| m.name == "MPI_Rsend_init_c"));
        // Without family types, an impl is an ordinary one.
        assert!(!is_family(&one_impl("_Wait(request: *mut MPI_Request, status: *mut MPI_Status)").1));
    }

    #[test]
    fn a_file_family_serves_every_access_form() {
        let d = parse_decls(include_str!("mpi.decl")).unwrap();
        let declared = |n: &str| d.functions.iter().find(|f| f.name == n).cloned();
        let (name, imp) = one_impl(
            "_File_read_shared_c(fh: MPI_File, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, \
             form: FileForm)",
        );
        let members = family_members(&name, &imp);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "MPI_File_read_shared",
                "MPI_File_read_shared_c",
                "MPI_File_iread_shared",
                "MPI_File_iread_shared_c",
                "MPI_File_read_ordered",
                "MPI_File_read_ordered_c",
                "MPI_File_iread_ordered",
                "MPI_File_iread_ordered_c",
                "MPI_File_read_ordered_begin",
                "MPI_File_read_ordered_begin_c"
            ]
        );
        assert!(declared("MPI_File_iread_ordered").is_none(), "MPI has no nonblocking ordered access");
        let args = |i: usize| member_args(&declared(names[i]).unwrap(), &members[i], &imp).unwrap().0.join(", ");
        assert_eq!(args(0), "fh, buf, count as MPI_Count, datatype, FileForm::Blocking(status)");
        assert_eq!(args(3), "fh, buf, count, datatype, FileForm::Start(request)");
        assert_eq!(args(4), "fh, buf, count as MPI_Count, datatype, FileForm::Collective(status)");
        assert_eq!(args(9), "fh, buf, count, datatype, FileForm::Begin");
        assert_eq!(members[8].describe(), "split collective begin, int counts");

        let (name, imp) = one_impl(
            "_File_write_at_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, \
             count: MPI_Count, datatype: MPI_Datatype, form: FileForm)",
        );
        let names: Vec<String> = family_members(&name, &imp).into_iter().map(|m| m.name).collect();
        assert_eq!(
            names[4..8],
            ["MPI_File_write_at_all", "MPI_File_write_at_all_c", "MPI_File_iwrite_at_all", "MPI_File_iwrite_at_all_c"]
        );
        assert_eq!(names[8], "MPI_File_write_at_all_begin");

        let (name, imp) =
            one_impl("_File_read_all_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status, end: SplitEnd)");
        let members = family_members(&name, &imp);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["MPI_File_read_at_all_end", "MPI_File_read_all_end", "MPI_File_read_ordered_end"]);
        let (args, _) = member_args(&declared(names[2]).unwrap(), &members[2], &imp).unwrap();
        assert_eq!(args.join(", "), "fh, buf, status, SplitEnd::Shared");
    }

    #[test]
    fn the_committed_decl_file_parses_and_maps() {
        let d = parse_decls(include_str!("mpi.decl")).unwrap();
        let names: Vec<String> = d.callbacks.iter().map(|c| c.name.clone()).collect();
        assert!(d.functions.len() >= 634, "{} functions", d.functions.len());
        for f in &d.functions {
            rust_return(&f.ret, &names).unwrap();
            for p in &f.params {
                rust_type(&p.ty, &names).unwrap_or_else(|e| panic!("{}: {e}", f.name));
            }
        }
    }

    #[test]
    fn finds_implementations() {
        // Built from pieces so that build.rs's own scan of this file finds nothing.
        let src = ["use x;", "    pub unsafe fn MPI_Send(", "        buf: *const c_void,", "    ) -> MpiResult {", "}"]
            .join("\n")
            + "\npub fn MPI_Wtime() -> f64 { 0.0 }\nfn MPI_Private() {}\n";
        let found: Vec<(String, bool, bool, Vec<(String, String)>)> =
            scan_impls(&src).into_iter().map(|(n, i)| (n, i.is_unsafe, i.returns_result, i.params)).collect();
        let buf = vec![("buf".to_string(), "*const c_void".to_string())];
        assert_eq!(
            found,
            vec![("MPI_Send".to_string(), true, true, buf), ("MPI_Wtime".to_string(), false, false, vec![])]
        );
    }
}
