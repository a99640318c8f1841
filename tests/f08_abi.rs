//! The C descriptor binding of the `mpi_f08` layer (src/abi/f08.rs): every field offset and
//! size of `CFI_cdesc_t` and `CFI_dim_t` matches the compiler's ISO_Fortran_binding.h (the
//! header that describes the descriptors gfortran passes for `TYPE(*), DIMENSION(..)`).

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use oxmpi::abi::f08::{CFI_cdesc_t, CFI_dim_t};

/// (key, value) lines: "size T", "offset T.field"; `dim` is the flexible array member.
fn rust_layout() -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    m.insert("size CFI_dim_t".into(), size_of::<CFI_dim_t>());
    m.insert("offset CFI_dim_t.lower_bound".into(), offset_of!(CFI_dim_t, lower_bound));
    m.insert("offset CFI_dim_t.extent".into(), offset_of!(CFI_dim_t, extent));
    m.insert("offset CFI_dim_t.sm".into(), offset_of!(CFI_dim_t, sm));
    m.insert("size CFI_cdesc_t".into(), size_of::<CFI_cdesc_t>());
    m.insert("offset CFI_cdesc_t.base_addr".into(), offset_of!(CFI_cdesc_t, base_addr));
    m.insert("offset CFI_cdesc_t.elem_len".into(), offset_of!(CFI_cdesc_t, elem_len));
    m.insert("offset CFI_cdesc_t.version".into(), offset_of!(CFI_cdesc_t, version));
    m.insert("offset CFI_cdesc_t.rank".into(), offset_of!(CFI_cdesc_t, rank));
    m.insert("offset CFI_cdesc_t.attribute".into(), offset_of!(CFI_cdesc_t, attribute));
    m.insert("offset CFI_cdesc_t.type".into(), offset_of!(CFI_cdesc_t, type_));
    m.insert("offset CFI_cdesc_t.dim".into(), offset_of!(CFI_cdesc_t, dim));
    // Field widths: a wrong integer type at the right offset would still read garbage.
    m.insert("size rank".into(), size_of::<i8>());
    m.insert("size attribute".into(), size_of::<i8>());
    m.insert("size type".into(), size_of::<i16>());
    m.insert("size CFI_index_t".into(), size_of::<isize>());
    m
}

const C_PROGRAM: &str = r#"
#include <ISO_Fortran_binding.h>
#include <stddef.h>
#include <stdio.h>
int main(void)
{
    CFI_cdesc_t d;
    printf("size CFI_dim_t\t%zu\n", sizeof(CFI_dim_t));
    printf("offset CFI_dim_t.lower_bound\t%zu\n", offsetof(CFI_dim_t, lower_bound));
    printf("offset CFI_dim_t.extent\t%zu\n", offsetof(CFI_dim_t, extent));
    printf("offset CFI_dim_t.sm\t%zu\n", offsetof(CFI_dim_t, sm));
    printf("size CFI_cdesc_t\t%zu\n", sizeof(CFI_cdesc_t));
    printf("offset CFI_cdesc_t.base_addr\t%zu\n", offsetof(CFI_cdesc_t, base_addr));
    printf("offset CFI_cdesc_t.elem_len\t%zu\n", offsetof(CFI_cdesc_t, elem_len));
    printf("offset CFI_cdesc_t.version\t%zu\n", offsetof(CFI_cdesc_t, version));
    printf("offset CFI_cdesc_t.rank\t%zu\n", offsetof(CFI_cdesc_t, rank));
    printf("offset CFI_cdesc_t.attribute\t%zu\n", offsetof(CFI_cdesc_t, attribute));
    printf("offset CFI_cdesc_t.type\t%zu\n", offsetof(CFI_cdesc_t, type));
    printf("offset CFI_cdesc_t.dim\t%zu\n", offsetof(CFI_cdesc_t, dim));
    printf("size rank\t%zu\n", sizeof(d.rank));
    printf("size attribute\t%zu\n", sizeof(d.attribute));
    printf("size type\t%zu\n", sizeof(d.type));
    printf("size CFI_index_t\t%zu\n", sizeof(CFI_index_t));
    return 0;
}
"#;

#[test]
fn cfi_descriptor_matches_iso_fortran_binding_h() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("f08_abi");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("cfi_layout.c");
    let binary = dir.join("cfi_layout");
    std::fs::write(&source, C_PROGRAM).unwrap();
    let compiled = Command::new("cc")
        .args(["-std=c11", "-Wall", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("cannot run cc (a C compiler with ISO_Fortran_binding.h, i.e. GCC with gfortran, is needed)");
    assert!(compiled.status.success(), "compiling {}: {}", source.display(), String::from_utf8_lossy(&compiled.stderr));
    let run = Command::new(&binary).output().unwrap();
    assert!(run.status.success(), "{} failed", binary.display());
    let c: BTreeMap<String, usize> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(c, rust_layout());
}
