//! Checks generated bindings of a C library opened at run time (libfabric, libpmix) against
//! the installed headers: every struct size, alignment and field offset, every constant and
//! type alias the bindings declare, computed on the Rust side from tables the test lists and
//! printed by a C program written from the same tables; and the tables must list everything
//! the generated file declares.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

pub struct StructLayout {
    /// The Rust name of the struct or union in the bindings.
    pub name: &'static str,
    pub size: usize,
    pub align: usize,
    /// (Rust field name, offset)
    pub fields: Vec<(&'static str, usize)>,
}

/// Every struct of a bindings module with every field it binds: its Rust layout is computed
/// from the list, and the C program that prints the header's layout is written from it.
/// Opaque structs (held through pointers only) list no fields; their size is still checked.
#[macro_export]
macro_rules! layouts_of {
    ($sys:path; $($name:ident { $($field:ident),* $(,)? }),* $(,)?) => {{
        use $sys as sys;
        vec![$($crate::bindings_layout::StructLayout {
            name: stringify!($name),
            size: std::mem::size_of::<sys::$name>(),
            align: std::mem::align_of::<sys::$name>(),
            fields: vec![$((stringify!($field), std::mem::offset_of!(sys::$name, $field))),*],
        }),*]
    }};
}

/// Constants of a bindings module, as (name, value widened the way C's cast to `unsigned long
/// long` widens it), for `Bindings::constants`.
#[macro_export]
macro_rules! constants_of {
    ($sys:path; $($name:ident),* $(,)?) => {{
        use $sys as sys;
        vec![$((stringify!($name), sys::$name as i64 as u64)),*]
    }};
}

/// What is checked for one bindings file.
pub struct Bindings {
    /// The generated file, as text (to find what it declares).
    pub source: &'static str,
    /// Its name in messages.
    pub file: &'static str,
    /// `#include` lines of the C program.
    pub includes: &'static [&'static str],
    /// `-I` directories of the C compiler.
    pub include_dirs: &'static [&'static str],
    /// The message when the headers are missing (naming the package).
    pub install_headers: &'static str,
    pub structs: Vec<StructLayout>,
    /// The C type of a struct of the table, from its Rust name.
    pub c_type: fn(&str) -> String,
    /// The C name of a field, from its Rust name (Rust renames keywords).
    pub c_field: fn(&str) -> &str,
    /// Structs only declared by the headers (pointed to, never defined): no layout.
    pub incomplete: &'static [&'static str],
    /// Numeric constants: (C expression, value widened as C's cast to `unsigned long long`);
    /// those named like a constant of the bindings count as its listing.
    pub constants: Vec<(&'static str, u64)>,
    /// String constants: (name, text).
    pub strings: Vec<(&'static str, &'static str)>,
    /// Type aliases: (Rust name, C spelling, size).
    pub aliases: Vec<(&'static str, &'static str, usize)>,
    /// Function pointer types, derived by the generator from the declarations themselves.
    pub function_types: &'static [&'static str],
}

impl Bindings {
    /// The lines the C program prints, computed on the Rust side: `size NAME N`, `align
    /// NAME N`, `offset NAME.FIELD N`, `const EXPR N`, `string NAME TEXT`.
    fn rust_lines(&self) -> BTreeMap<String, String> {
        let mut lines = BTreeMap::new();
        for s in &self.structs {
            lines.insert(format!("size {}", s.name), s.size.to_string());
            lines.insert(format!("align {}", s.name), s.align.to_string());
            for (field, offset) in &s.fields {
                lines.insert(format!("offset {}.{}", s.name, (self.c_field)(field)), offset.to_string());
            }
        }
        for (_, c, size) in &self.aliases {
            lines.insert(format!("size {c}"), size.to_string());
        }
        for (expr, value) in &self.constants {
            lines.insert(format!("const {expr}"), value.to_string());
        }
        for (name, text) in &self.strings {
            lines.insert(format!("string {name}"), text.to_string());
        }
        lines
    }

    /// The C program printing the same lines from the headers.
    fn c_program(&self) -> String {
        let mut c = String::from("#include <stdio.h>\n#include <stddef.h>\n");
        for include in self.includes {
            writeln!(c, "#include <{include}>").unwrap();
        }
        c.push_str("int main(void)\n{\n");
        for s in &self.structs {
            let (name, ty) = (s.name, (self.c_type)(s.name));
            writeln!(c, "    printf(\"size {name}\\t%zu\\n\", sizeof({ty}));").unwrap();
            writeln!(c, "    printf(\"align {name}\\t%zu\\n\", _Alignof({ty}));").unwrap();
            for (field, _) in &s.fields {
                let field = (self.c_field)(field);
                writeln!(c, "    printf(\"offset {name}.{field}\\t%zu\\n\", offsetof({ty}, {field}));").unwrap();
            }
        }
        for (_, ctype, _) in &self.aliases {
            writeln!(c, "    printf(\"size {ctype}\\t%zu\\n\", sizeof({ctype}));").unwrap();
        }
        for (expr, _) in &self.constants {
            writeln!(c, "    printf(\"const {expr}\\t%llu\\n\", (unsigned long long)(long long)({expr}));").unwrap();
        }
        for (name, _) in &self.strings {
            writeln!(c, "    printf(\"string {name}\\t%s\\n\", {name});").unwrap();
        }
        c.push_str("    return 0;\n}\n");
        c
    }

    fn run_c_program(&self, dir: &Path) -> BTreeMap<String, String> {
        std::fs::create_dir_all(dir).unwrap();
        let source = dir.join("layout.c");
        let binary = dir.join("layout");
        std::fs::write(&source, self.c_program()).unwrap();
        let compiled = Command::new("cc")
            .args(["-std=gnu11", "-Wall"])
            .args(self.include_dirs.iter().map(|d| format!("-I{d}")))
            .arg("-o")
            .arg(&binary)
            .arg(&source)
            .output()
            .expect("cannot run cc (a C compiler is needed to read the headers' layout)");
        let stderr = String::from_utf8_lossy(&compiled.stderr);
        assert!(!stderr.contains("No such file or directory"), "{}: {stderr}", self.install_headers);
        assert!(compiled.status.success(), "compiling {}: {stderr}", source.display());
        let run = Command::new(&binary).output().unwrap();
        assert!(run.status.success(), "{} failed", binary.display());
        String::from_utf8(run.stdout)
            .unwrap()
            .lines()
            .map(|line| {
                let (key, value) = line.split_once('\t').unwrap();
                (key.to_string(), value.to_string())
            })
            .collect()
    }

    /// Every line of the Rust side equals the C program's (run in `dir`).
    pub fn assert_match_headers(&self, dir: &Path) {
        let expected = self.run_c_program(dir);
        let actual = self.rust_lines();
        assert_eq!(expected.len(), actual.len(), "the C program prints one line per Rust item");
        let mismatches: Vec<String> = actual
            .iter()
            .filter(|(key, value)| expected.get(*key) != Some(value))
            .map(|(key, value)| format!("{key}: Rust {value}, C {}", expected.get(key).map_or("(none)", |v| v)))
            .collect();
        assert!(
            mismatches.is_empty(),
            "{} disagrees with the installed headers:\n{}",
            self.file,
            mismatches.join("\n")
        );
    }

    /// (struct -> fields, constants, type aliases) as declared in the generated file.
    fn declared_items(&self) -> (BTreeMap<String, Vec<String>>, BTreeSet<String>, BTreeSet<String>) {
        let mut structs = BTreeMap::new();
        let mut constants = BTreeSet::new();
        let mut aliases = BTreeSet::new();
        let mut open: Option<(String, Vec<String>)> = None;
        for line in self.source.lines() {
            if let Some((name, fields)) = open.as_mut() {
                if line == "}" {
                    structs.insert(std::mem::take(name), std::mem::take(fields));
                    open = None;
                } else if let Some(field) = line.trim().strip_prefix("pub ").and_then(|rest| rest.split_once(':')) {
                    fields.push(field.0.to_string());
                } else if line.trim().starts_with("_unused:") {
                    fields.push("_unused".to_string());
                }
            } else if let Some(rest) = line.strip_prefix("pub struct ").or_else(|| line.strip_prefix("pub union ")) {
                let name = rest.split([' ', '<', '(']).next().unwrap();
                if !name.starts_with("__Bindgen") {
                    assert!(rest.ends_with('{'), "unexpected declaration in {}: {line}", self.file);
                    open = Some((name.to_string(), Vec::new()));
                }
            } else if let Some(rest) = line.strip_prefix("pub const ") {
                constants.insert(rest.split(':').next().unwrap().to_string());
            } else if let Some(rest) = line.strip_prefix("pub type ") {
                aliases.insert(rest.split([' ', '=']).next().unwrap().to_string());
            }
        }
        (structs, constants, aliases)
    }

    /// The tables list every struct (with its fields in order), constant and alias of the
    /// generated file, and nothing else.
    pub fn assert_tables_cover_declarations(&self) {
        let (structs, constants, aliases) = self.declared_items();
        let mut tabled: BTreeMap<String, Vec<String>> = self
            .structs
            .iter()
            .map(|s| (s.name.to_string(), s.fields.iter().map(|(field, _)| field.to_string()).collect()))
            .collect();
        for name in self.incomplete {
            tabled.insert(name.to_string(), vec!["_unused".to_string()]);
        }
        let declared: BTreeMap<String, Vec<String>> = structs
            .into_iter()
            .map(|(name, fields)| (name, fields.into_iter().filter(|f| f != "_bindgen_opaque_blob").collect()))
            .collect();
        let differing: Vec<String> = declared
            .keys()
            .chain(tabled.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|name| declared.get(*name) != tabled.get(*name))
            .map(|name| format!("{name}: {} {:?}, table {:?}", self.file, declared.get(name), tabled.get(name)))
            .collect();
        assert!(
            differing.is_empty(),
            "the struct table (or the incomplete list) must list every struct of {} with its fields in order:\n{}",
            self.file,
            differing.join("\n")
        );

        let tabled_constants: BTreeSet<String> = self
            .constants
            .iter()
            .map(|(name, _)| name.to_string())
            .filter(|name| constants.contains(name))
            .chain(self.strings.iter().map(|(name, _)| name.to_string()))
            .collect();
        let unlisted: Vec<&String> = constants.symmetric_difference(&tabled_constants).collect();
        assert!(
            unlisted.is_empty(),
            "the constant tables must list exactly the constants of {}: {unlisted:?}",
            self.file
        );

        let tabled_aliases: BTreeSet<String> = self
            .aliases
            .iter()
            .map(|(name, _, _)| *name)
            .chain(self.function_types.iter().copied())
            .map(str::to_string)
            .collect();
        assert_eq!(aliases, tabled_aliases, "the alias table and function types must list every type of {}", self.file);
    }
}
