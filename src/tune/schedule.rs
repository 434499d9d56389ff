//! The order of a tune's arms. Each round measures the baseline (no fix) and every fix once;
//! the order rotates by one place a round, so that over the rounds every setting is measured
//! at every position, and a drift of the machine (a warming CPU, a neighbour's load that comes
//! and goes) falls on all of them alike instead of on the one measured last. The final phase
//! measures the worthwhile fixes together against none, alternating A B B A, for the same
//! reason.

/// What an arm measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Treatment {
    /// No fix: the machine as it is.
    Baseline,
    /// The fix at this index of the tune's measured fixes.
    Fix(usize),
    /// Every worthwhile fix at once.
    Together,
}

impl Treatment {
    /// The arm's directory name part: `baseline`, the fix's name, `together`.
    pub(crate) fn name(self, fixes: &[&str]) -> String {
        match self {
            Treatment::Baseline => "baseline".into(),
            Treatment::Fix(i) => fixes[i].to_string(),
            Treatment::Together => "together".into(),
        }
    }
}

/// One arm: a run of one setting in one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arm {
    pub round: usize,
    pub(crate) treatment: Treatment,
}

/// The first phase: `rounds` rounds of the baseline and each of `fixes` fixes, rotated.
pub(crate) fn rounds(fixes: usize, rounds: usize) -> Vec<Arm> {
    let treatments: Vec<Treatment> = std::iter::once(Treatment::Baseline)
        .chain((0..fixes).map(Treatment::Fix))
        .collect();
    let n = treatments.len();
    (0..rounds)
        .flat_map(|round| {
            let treatments = &treatments;
            (0..n).map(move |k| Arm {
                round,
                treatment: treatments[(k + round) % n],
            })
        })
        .collect()
}

/// The final phase: `rounds` rounds of the baseline and every worthwhile fix together,
/// A B, B A, A B...
pub(crate) fn together(rounds: usize) -> Vec<Arm> {
    (0..rounds)
        .flat_map(|round| {
            let pair = match round % 2 {
                0 => [Treatment::Baseline, Treatment::Together],
                _ => [Treatment::Together, Treatment::Baseline],
            };
            pair.map(|treatment| Arm { round, treatment })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setting once a round, and at every position over as many rounds as settings.
    #[test]
    fn each_round_measures_every_setting_once_and_the_order_rotates() {
        let arms = rounds(2, 3);
        assert_eq!(arms.len(), 9);
        let order: Vec<Vec<Treatment>> = arms
            .chunks(3)
            .map(|c| c.iter().map(|a| a.treatment).collect())
            .collect();
        use Treatment::*;
        assert_eq!(
            order,
            [
                vec![Baseline, Fix(0), Fix(1)],
                vec![Fix(0), Fix(1), Baseline],
                vec![Fix(1), Baseline, Fix(0)]
            ]
        );
        assert!(
            arms.chunks(3)
                .enumerate()
                .all(|(r, c)| c.iter().all(|a| a.round == r))
        );
    }

    #[test]
    fn together_alternates_a_b_b_a() {
        let s: Vec<Treatment> = together(3).iter().map(|a| a.treatment).collect();
        use Treatment::*;
        assert_eq!(
            s,
            [Baseline, Together, Together, Baseline, Baseline, Together]
        );
    }
}
