//! File hints under ROMIO's names (MPI-4.1 section 14.2.8): which keys are known, their
//! defaults, which values are accepted, and the set `MPI_File_get_info` reports back.
//!
//! Every known hint is accepted and reported with the value in use; values that do not
//! parse keep the previous value (ROMIO does the same). `romio_ds_read`/`romio_ds_write`
//! and `ind_rd_buffer_size`/`ind_wr_buffer_size` steer data sieving of independent
//! accesses; `romio_cb_read`, `romio_cb_write`, `cb_buffer_size` and `cb_nodes` steer
//! two-phase collective I/O (`collective`). `cb_nodes` is reported as the number of
//! aggregators used: by default one per node of the file's group, never more than its
//! ranks. Unknown keys are ignored, as the standard allows.

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

/// The hints of a newly opened file of `ranks` ranks on `nodes` nodes: the defaults (one
/// aggregator per node), then what `info` sets.
pub fn initial(info: &Info, nodes: usize, ranks: usize) -> Info {
    let mut used = Info::default();
    for (key, _, default) in HINTS {
        if let Some(v) = default {
            used.set(key, v);
        }
    }
    used.set("cb_nodes", &nodes.max(1).to_string());
    apply(&mut used, info, ranks);
    used
}

/// Takes the known hints of `info` whose values are valid into `used`, for a file of
/// `ranks` ranks (there are never more aggregators than ranks).
pub fn apply(used: &mut Info, info: &Info, ranks: usize) {
    for (key, kind, _) in HINTS {
        if let Some(v) = info.get(key)
            && accepts(kind, v)
        {
            used.set(key, v.trim());
        }
    }
    let aggregators = cb_nodes(used).min(ranks.max(1));
    used.set("cb_nodes", &aggregators.to_string());
}

/// Whether a collective access uses two-phase I/O: `romio_cb_read` / `romio_cb_write`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Buffering {
    Disable,
    Enable,
    /// When the ranks' accesses interleave.
    Automatic,
}

/// The collective-buffering switch in use for reads (`write` false) or writes.
pub fn buffering(used: &Info, write: bool) -> Buffering {
    match used.get(if write { "romio_cb_write" } else { "romio_cb_read" }) {
        Some("enable") => Buffering::Enable,
        Some("disable") => Buffering::Disable,
        _ => Buffering::Automatic,
    }
}

/// The bytes an aggregator moves per round of a collective access (`cb_buffer_size`).
pub fn cb_buffer_size(used: &Info) -> usize {
    used.get("cb_buffer_size").and_then(|v| v.parse().ok()).unwrap_or(16 << 20)
}

/// The number of aggregators of collective accesses (`cb_nodes`).
pub fn cb_nodes(used: &Info) -> usize {
    used.get("cb_nodes").and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// The most bytes an independent read (`write` false) or write may move at once to pick its
/// runs out of (data sieving: `ind_rd_buffer_size`, `ind_wr_buffer_size`), or None when
/// `romio_ds_read` (`romio_ds_write`) is `disable`.
pub fn sieve_limit(used: &Info, write: bool) -> Option<usize> {
    let (switch, size) =
        if write { ("romio_ds_write", "ind_wr_buffer_size") } else { ("romio_ds_read", "ind_rd_buffer_size") };
    if used.get(switch) == Some("disable") {
        return None;
    }
    used.get(size).and_then(|v| v.parse().ok())
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
        let used = initial(&info, 2, 4);
        assert_eq!(used.get("cb_buffer_size"), Some("1048576"));
        assert_eq!(used.get("romio_cb_write"), Some("enable"));
        assert_eq!(used.get("romio_ds_read"), Some("automatic"));
        assert_eq!(used.get("striping_unit"), Some("65536"));
        assert_eq!(used.get("cb_nodes"), Some("2"), "one per node by default");
        assert_eq!(used.get("striping_factor"), None);
        assert_eq!(used.get("unknown_key"), None);
        assert_eq!(sieve_limit(&used, false), Some(4194304));
        assert_eq!(sieve_limit(&used, true), Some(524288));
        info.set("romio_ds_read", "disable");
        assert_eq!(sieve_limit(&initial(&info, 1, 1), false), None);
        assert_eq!(sieve_limit(&initial(&info, 1, 1), true), Some(524288));
        info.set("romio_ds_write", "disable");
        assert_eq!(sieve_limit(&initial(&info, 1, 1), true), None);
        assert_eq!(buffering(&used, true), Buffering::Enable);
        assert_eq!(buffering(&used, false), Buffering::Automatic);
        assert_eq!(cb_buffer_size(&used), 1048576);
    }

    #[test]
    fn aggregators_never_outnumber_ranks() {
        let mut info = Info::default();
        info.set("cb_nodes", "8");
        let mut used = initial(&info, 1, 3);
        assert_eq!(cb_nodes(&used), 3);
        info.set("cb_nodes", "2");
        apply(&mut used, &info, 3);
        assert_eq!(used.get("cb_nodes"), Some("2"));
        assert_eq!(cb_nodes(&initial(&Info::default(), 4, 2)), 2);
    }
}
