//! Inside a Slurm allocation (`SLURM_JOB_ID` set): the allocation's nodes and tasks per node
//! as hosts and slots, and `srun` as the launcher of the proxies.

use crate::options::HostSlots;

/// The words before the host name that start one proxy on one node of the allocation with
/// `srun` (quiet: no notes on the terminal): one task, sharing the allocation's CPUs with other steps (`--overlap`), no PMI of
/// Slurm's (the proxy serves PMI to its ranks) and no binding (the ranks are the proxy's
/// children and would inherit a one-CPU mask).
pub fn launcher_words() -> Vec<String> {
    ["srun", "--quiet", "--nodes=1", "--ntasks=1", "--overlap", "--mpi=none", "--cpu-bind=none", "--nodelist"]
        .map(String::from)
        .to_vec()
}

/// The allocation's hosts with their task counts, when `var` (the environment) says mpiexec
/// runs inside one: `None` outside an allocation; an error naming the variable when
/// `SLURM_JOB_NODELIST` or `SLURM_TASKS_PER_NODE` cannot be read.
pub fn allocation(var: impl Fn(&str) -> Option<String>) -> Option<Result<Vec<HostSlots>, String>> {
    var("SLURM_JOB_ID")?;
    let nodes = var("SLURM_JOB_NODELIST").or_else(|| var("SLURM_NODELIST"))?;
    Some((|| {
        let names = expand_nodelist(&nodes).map_err(|e| format!("SLURM_JOB_NODELIST={nodes:?}: {e}"))?;
        let slots = match var("SLURM_TASKS_PER_NODE") {
            Some(text) => {
                let counts = tasks_per_node(&text).map_err(|e| format!("SLURM_TASKS_PER_NODE={text:?}: {e}"))?;
                if counts.len() != names.len() {
                    return Err(format!(
                        "SLURM_TASKS_PER_NODE={text:?} gives {} nodes, SLURM_JOB_NODELIST={nodes:?} {}",
                        counts.len(),
                        names.len()
                    ));
                }
                counts.into_iter().map(Some).collect()
            }
            None => vec![None; names.len()],
        };
        Ok(names.into_iter().zip(slots).map(|(name, slots)| HostSlots { name, slots }).collect())
    })())
}

/// Expands a Slurm host list: `n1,n[3-5,07],r[1-2]-c[1-2]` gives n1, n3, n4, n5, n07,
/// r1-c1, r1-c2, r2-c1, r2-c2 (zero padding kept as written).
pub fn expand_nodelist(list: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for item in split_top_level(list)? {
        if item.is_empty() {
            continue;
        }
        expand_item(item, &mut names)?;
    }
    if names.is_empty() {
        return Err("no node".into());
    }
    Ok(names)
}

/// Splits at commas outside brackets.
fn split_top_level(list: &str) -> Result<Vec<&str>, String> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (index, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(list[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err("unbalanced brackets".into());
        }
    }
    if depth != 0 {
        return Err("unbalanced brackets".into());
    }
    items.push(list[start..].trim());
    Ok(items)
}

fn expand_item(item: &str, names: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = item.find('[') else {
        names.push(item.to_string());
        return Ok(());
    };
    let close = open + item[open..].find(']').ok_or("unbalanced brackets")?;
    let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    for range in ranges.split(',') {
        let (low, high) = range.split_once('-').unwrap_or((range, range));
        let number = |text: &str| text.trim().parse::<u64>().map_err(|_| format!("bad range {range:?}"));
        let (first, last) = (number(low)?, number(high)?);
        if last < first || last - first > 1_000_000 {
            return Err(format!("bad range {range:?}"));
        }
        let width = low.trim().len();
        for value in first..=last {
            expand_item(&format!("{prefix}{value:0width$}{rest}"), names)?;
        }
    }
    Ok(())
}

/// Expands `SLURM_TASKS_PER_NODE`: `2(x3),1` gives 2, 2, 2, 1.
pub fn tasks_per_node(text: &str) -> Result<Vec<usize>, String> {
    let mut counts = Vec::new();
    for item in text.split(',').map(str::trim) {
        let (count, repeat) = match item.split_once('(') {
            Some((count, rest)) => {
                let times =
                    rest.strip_prefix('x').and_then(|r| r.strip_suffix(')')).ok_or(format!("bad item {item:?}"))?;
                (count, times.parse::<usize>().map_err(|_| format!("bad item {item:?}"))?)
            }
            None => (item, 1),
        };
        let count: usize = count.parse().map_err(|_| format!("bad item {item:?}"))?;
        if count == 0 || repeat == 0 || repeat > 1_000_000 {
            return Err(format!("bad item {item:?}"));
        }
        counts.extend(std::iter::repeat_n(count, repeat));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_host_lists() {
        assert_eq!(expand_nodelist("vm").unwrap(), ["vm"]);
        assert_eq!(expand_nodelist("n1,n[3-5,07]").unwrap(), ["n1", "n3", "n4", "n5", "n07"]);
        assert_eq!(expand_nodelist("node[008-010]").unwrap(), ["node008", "node009", "node010"]);
        assert_eq!(expand_nodelist("r[1-2]-c[1-2]").unwrap(), ["r1-c1", "r1-c2", "r2-c1", "r2-c2"]);
        for bad in ["", "n[1-", "n[a-b]", "n[3-1]", "n]1["] {
            assert!(expand_nodelist(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn expands_tasks_per_node() {
        assert_eq!(tasks_per_node("4").unwrap(), [4]);
        assert_eq!(tasks_per_node("2(x3),1").unwrap(), [2, 2, 2, 1]);
        for bad in ["", "x", "2(x0)", "2(3)", "0"] {
            assert!(tasks_per_node(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_the_allocation() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert!(allocation(env(&[("SLURM_JOB_NODELIST", "n1")])).is_none());
        let hosts = allocation(env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_NODELIST", "n[1-3]"),
            ("SLURM_TASKS_PER_NODE", "2(x2),1"),
        ]))
        .unwrap()
        .unwrap();
        let got: Vec<(&str, Option<usize>)> = hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect();
        assert_eq!(got, [("n1", Some(2)), ("n2", Some(2)), ("n3", Some(1))]);
        let error =
            allocation(env(&[("SLURM_JOB_ID", "7"), ("SLURM_JOB_NODELIST", "n[1-3]"), ("SLURM_TASKS_PER_NODE", "2")]))
                .unwrap()
                .unwrap_err();
        assert!(error.contains("SLURM_TASKS_PER_NODE"), "{error}");
        assert_eq!(launcher_words().last().map(String::as_str), Some("--nodelist"));
    }
}
