//! File hints under ROMIO's names (MPI-4.1 section 14.2.8): which keys are known, their
//! defaults, which values are accepted, and the set `MPI_File_get_info` reports back.
//!
//! Every known hint is accepted and reported with the value in use; values that do not
//! parse keep the previous value (ROMIO does the same). `romio_ds_read` and
//! `ind_rd_buffer_size` steer data sieving of independent reads; collective buffering is not
//! done yet (every rank does its own accesses), so its hints are recorded and reported only.
//! Unknown keys are ignored, as the standard allows.

use crate::info::Info;

/// What values a hint takes.
#[derive(Clone, Copy)]
enum Kind {
    /// A positive integer (a size in bytes or a count).
    Positive,
    /// `enable`, `disable` or `automatic`.
    Switch,
    /// Any text.
    Text,
}

/// The known hints: name, kind, and the default reported when the program set none (None:
/// reported only once set).
const HINTS: [(&str, Kind, Option<&str>); 12] = [
    ("cb_buffer_size", Kind::Positive, Some("16777216")),
    ("cb_nodes", Kind::Positive, Some("1")),
    ("romio_cb_read", Kind::Switch, Some("automatic")),
    ("romio_cb_write", Kind::Switch, Some("automatic")),
    ("romio_ds_read", Kind::Switch, Some("automatic")),
    ("romio_ds_write", Kind::Switch, Some("automatic")),
    ("ind_rd_buffer_size", Kind::Positive, Some("4194304")),
    ("ind_wr_buffer_size", Kind::Positive, Some("524288")),
    ("cb_config_list", Kind::Text, Some("*:1")),
    ("striping_unit", Kind::Positive, None),
    ("striping_factor", Kind::Positive, None),
    ("access_style", Kind::Text, None),
];

fn accepts(kind: Kind, value: &str) -> bool {
    match kind {
        Kind::Positive => value.trim().parse::<u64>().is_ok_and(|v| v > 0),
        Kind::Switch => matches!(value.trim(), "enable" | "disable" | "automatic"),
        Kind::Text => !value.is_empty(),
    }
}

/// The hints of a newly opened file: the defaults, then what `info` sets.
pub fn initial(info: &Info) -> Info {
    let mut used = Info::default();
    for (key, _, default) in HINTS {
        if let Some(v) = default {
            used.set(key, v);
        }
    }
    apply(&mut used, info);
    used
}

/// Takes the known hints of `info` whose values are valid into `used`.
pub fn apply(used: &mut Info, info: &Info) {
    for (key, kind, _) in HINTS {
        if let Some(v) = info.get(key)
            && accepts(kind, v)
        {
            used.set(key, v.trim());
        }
    }
}

/// The most bytes an independent read may read at once to pick its runs out of (data
/// sieving, `ind_rd_buffer_size`), or None when `romio_ds_read` is `disable`.
pub fn read_sieve_limit(used: &Info) -> Option<usize> {
    if used.get("romio_ds_read") == Some("disable") {
        return None;
    }
    used.get("ind_rd_buffer_size").and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_reported_and_valid_values_taken() {
        let mut info = Info::default();
        info.set("cb_buffer_size", "1048576");
        info.set("romio_cb_write", "enable");
        info.set("romio_ds_read", "sometimes");
        info.set("striping_unit", "65536");
        info.set("cb_nodes", "-3");
        info.set("unknown_key", "x");
        let used = initial(&info);
        assert_eq!(used.get("cb_buffer_size"), Some("1048576"));
        assert_eq!(used.get("romio_cb_write"), Some("enable"));
        assert_eq!(used.get("romio_ds_read"), Some("automatic"));
        assert_eq!(used.get("striping_unit"), Some("65536"));
        assert_eq!(used.get("cb_nodes"), Some("1"));
        assert_eq!(used.get("striping_factor"), None);
        assert_eq!(used.get("unknown_key"), None);
        assert_eq!(read_sieve_limit(&used), Some(4194304));
        info.set("romio_ds_read", "disable");
        assert_eq!(read_sieve_limit(&initial(&info)), None);
    }
}
