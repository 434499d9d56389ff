//! Tables with one row per CPU, scaled to the number of CPUs (issue 30): up to [`GROUP_ABOVE`]
//! CPUs every CPU has its row; above, the [`WORST_SHOWN`] worst (largest maximum first) and one
//! `+N` row standing for the rest, each of its figures the largest among them and its counts
//! their sum, so that what it says holds for every CPU it stands for; a note names them
//! ([`rest_note`]). The one place of this grouping: the terminal summary's per-CPU table
//! (`cpu_summary`), the `--trace` split table (`cpu_tables`) and the phases tables (`phases`)
//! all choose and sum up their rows here.

use crate::cpulist::format_cpu_list;

/// Up to this many CPUs, every CPU has its row.
pub(crate) const GROUP_ABOVE: usize = 16;
/// Above [`GROUP_ABOVE`] CPUs, the rows shown before the rest's summary.
pub(crate) const WORST_SHOWN: usize = 8;

/// Which rows are shown one by one, in order, and which are summed up: every row (in the given
/// order) with `every_cpu` or up to [`GROUP_ABOVE`] of them; else the [`WORST_SHOWN`] with the
/// largest maximum (an unknown maximum last, ties in the given order) and the rest.
pub(crate) fn choose(max_ns: &[Option<i64>], every_cpu: bool) -> (Vec<usize>, Vec<usize>) {
    let all: Vec<usize> = (0..max_ns.len()).collect();
    if every_cpu || max_ns.len() <= GROUP_ABOVE {
        return (all, Vec::new());
    }
    let mut order = all;
    order.sort_by_key(|&i| std::cmp::Reverse(max_ns[i].map_or(i128::MIN, i128::from)));
    let rest = order.split_off(WORST_SHOWN);
    (order, rest)
}

/// The largest of some figures, or None when one is unknown (the largest is then unknown too).
pub(crate) fn largest<T: Ord + Copy>(values: impl Iterator<Item = Option<T>>) -> Option<T> {
    values
        .collect::<Option<Vec<T>>>()
        .and_then(|v| v.into_iter().max())
}

/// [`largest`] of figures without a total order (means, rates): by `f64::total_cmp`.
pub(crate) fn largest_f64(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .collect::<Option<Vec<f64>>>()
        .and_then(|v| v.into_iter().max_by(f64::total_cmp))
}

/// The sum of some counts, or None when one is unknown; saturating, never wrapping.
pub(crate) fn sum(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    values
        .collect::<Option<Vec<u64>>>()
        .map(|v| v.iter().fold(0u64, |a, &b| a.saturating_add(b)))
}

/// The first cell of the rest's row: `+120`.
pub(crate) fn rest_label(count: usize) -> String {
    format!("+{count}")
}

/// What the `+N` row is: "+120: the other 120 CPUs (0-76,78-120): each figure their largest,
/// the counts their sum". Callers add where every CPU is shown.
pub(crate) fn rest_note(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    format!(
        "{}: the other {} CPUs ({}): each figure their largest, the counts their sum",
        rest_label(cpus.len()),
        cpus.len(),
        format_cpu_list(&sorted)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_to_16_rows_every_row_in_its_order() {
        let max: Vec<Option<i64>> = (0..16).map(|i| Some(100 - i)).collect();
        assert_eq!(choose(&max, false), ((0..16).collect(), vec![]));
    }

    #[test]
    fn above_16_the_8_worst_then_the_rest() {
        // 20 rows; row 19's maximum is unknown, row 3 the worst, then 18, 17, ...
        let mut max: Vec<Option<i64>> = (0..20).map(|i| Some(i * 10)).collect();
        max[3] = Some(10_000);
        max[19] = None;
        let (shown, rest) = choose(&max, false);
        assert_eq!(shown, vec![3, 18, 17, 16, 15, 14, 13, 12]);
        let mut expected_rest: Vec<usize> = (0..12).filter(|&i| i != 3).collect();
        expected_rest.push(19);
        let mut sorted_rest = rest.clone();
        sorted_rest.sort_unstable();
        assert_eq!(sorted_rest, {
            let mut e = expected_rest.clone();
            e.sort_unstable();
            e
        });
        // The unknown maximum sorts last.
        assert_eq!(*rest.last().unwrap(), 19);
        // Every row when asked.
        assert_eq!(choose(&max, true).0.len(), 20);
    }

    #[test]
    fn the_rests_figures_hold_for_each_of_them() {
        assert_eq!(largest([Some(3), Some(9), Some(1)].into_iter()), Some(9));
        assert_eq!(largest([Some(3), None].into_iter()), None);
        assert_eq!(
            largest_f64([Some(1.5), Some(-2.0), Some(7.25)].into_iter()),
            Some(7.25)
        );
        assert_eq!(largest_f64([Some(1.5), None].into_iter()), None);
        assert_eq!(sum([Some(3), Some(4)].into_iter()), Some(7));
        assert_eq!(sum([Some(u64::MAX), Some(4)].into_iter()), Some(u64::MAX));
        assert_eq!(sum([Some(3), None].into_iter()), None);
    }

    #[test]
    fn the_note_names_the_cpus_it_stands_for() {
        assert_eq!(
            rest_note(&[5, 0, 1, 2, 7]),
            "+5: the other 5 CPUs (0-2,5,7): each figure their largest, the counts their sum"
        );
    }
}
