//! The built cdylib exports every symbol Debian's libmpich.so.12 exports, with MPICH's kind:
//! `MPI_X` weak at the address of the strong `PMPI_X`, data objects with MPICH's sizes, and
//! the soname `libmpi.so.12`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// target/<profile>/liboxmpi.so, found from this test executable in target/<profile>/deps/
/// (where cargo also leaves the library it builds for the tests).
fn cdylib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let candidates = [deps.parent().unwrap().join("liboxmpi.so"), deps.join("liboxmpi.so")];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| panic!("liboxmpi.so not found at {candidates:?}; build the library first (cargo build)"))
}

/// name -> (nm type letter, address, size) of the dynamic symbols the library defines.
fn exported() -> HashMap<String, (char, u64, Option<u64>)> {
    let out = Command::new("nm").args(["-D", "--defined-only", "-S"]).arg(cdylib()).output().expect("run nm");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut map = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (addr, size, kind, name) = match f.len() {
            4 => (f[0], Some(f[1]), f[2], f[3]),
            3 => (f[0], None, f[1], f[2]),
            _ => continue,
        };
        let addr = u64::from_str_radix(addr, 16).unwrap();
        let size = size.map(|s| u64::from_str_radix(s, 16).unwrap());
        map.insert(name.to_string(), (kind.chars().next().unwrap(), addr, size));
    }
    map
}

/// (name, nm type, size) of every symbol libmpich exports.
fn mpich_exports() -> Vec<(String, char, u64)> {
    let text = include_str!("../src/abi/data/libmpich-exports.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (c.len() >= 3).then(|| (c[0].to_string(), c[1].chars().next().unwrap(), c[2].parse().unwrap()))
        })
        .collect()
}

#[test]
fn every_mpich_symbol_is_exported_with_its_kind() {
    let ours = exported();
    let mut problems = Vec::new();
    for (name, kind, size) in mpich_exports() {
        let Some(&(our_kind, addr, our_size)) = ours.get(&name) else {
            problems.push(format!("{name}: missing"));
            continue;
        };
        match kind {
            'W' | 'V' => {
                if our_kind != 'W' && our_kind != 'V' {
                    problems.push(format!("{name}: is {our_kind}, MPICH has a weak symbol"));
                }
                // A weak MPI_X aliases PMPI_X so that profilers can interpose.
                let pname = format!("P{name}");
                match ours.get(&pname) {
                    Some(&('T', paddr, _)) if paddr == addr => {}
                    other => problems.push(format!("{name}: not an alias of a strong {pname} ({other:?})")),
                }
            }
            'T' => {
                if our_kind != 'T' {
                    problems.push(format!("{name}: is {our_kind}, MPICH has T"));
                }
            }
            'B' | 'D' | 'R' => {
                if !matches!(our_kind, 'B' | 'D' | 'R') {
                    problems.push(format!("{name}: is {our_kind}, MPICH has data ({kind})"));
                }
                // Copy relocations need MPICH's size. The MPII_Version_* strings hold our own text.
                if !name.starts_with("MPII_Version_") && our_size != Some(size) {
                    problems.push(format!("{name}: size {our_size:?}, MPICH has {size}"));
                }
            }
            _ => problems.push(format!("{name}: unexpected kind {kind} in the table")),
        }
    }
    assert!(problems.is_empty(), "{} export problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn soname_is_mpichs() {
    let out = Command::new("readelf").arg("-d").arg(cdylib()).output().expect("run readelf");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Library soname: [libmpi.so.12]"), "soname not libmpi.so.12:\n{text}");
}

/// The Fortran routines of Debian's libmpichfort.so.12 (MPICH's four manglings of `mpi_x_` and
/// `pmpi_x_`, the strong one `pmpi_x_`) and its common blocks, with MPICH's sizes. The `use
/// mpi_f08` symbols (`*_f08*`) and MPICH's internal ones are not provided yet.
#[test]
fn every_mpichfort_routine_and_common_block_is_exported() {
    let ours = exported();
    let text = include_str!("../src/abi/data/libmpichfort-exports.tsv");
    let mut problems = Vec::new();
    let mut routines = 0;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let c: Vec<&str> = l.split('\t').collect();
        let (name, kind, size) = (c[0], c[1], c[2].parse::<u64>().unwrap());
        let fortran_name = name.to_lowercase().starts_with("mpi_") || name.to_lowercase().starts_with("pmpi_");
        let common = name.starts_with("mpipriv") || name.starts_with("mpifcmb");
        if name.contains("_f08") || !(fortran_name || common) || name.starts_with("MPI_Status_") {
            continue;
        }
        match (ours.get(name), kind) {
            (None, _) => problems.push(format!("{name}: missing")),
            (Some(&(k, _, _)), "T") if k != 'T' => problems.push(format!("{name}: is {k}, MPICH has T")),
            (Some(&(k, _, _)), "W") if k != 'W' => problems.push(format!("{name}: is {k}, MPICH has W")),
            (Some(&(_, _, s)), "B") if s != Some(size) => {
                problems.push(format!("{name}: size {s:?}, MPICH has {size}"))
            }
            _ => routines += 1,
        }
    }
    for name in ["MPI_Status_c2f08", "MPI_Status_f082c", "PMPI_Status_c2f08", "PMPI_Status_f082c"] {
        if !ours.contains_key(name) {
            problems.push(format!("{name}: missing"));
        }
    }
    assert!(problems.is_empty(), "{} Fortran export problems:\n{}", problems.len(), problems.join("\n"));
    assert!(routines > 3000, "only {routines} Fortran symbols checked");
}
