//! Which processes hold a file open: the search of /proc that names the holders of a CPU's lock
//! (cpulock.rs) and of a PM QoS request (pmqos.rs), the one place that walks other processes'
//! descriptors.
//!
//! Any user can hold millions of descriptors cheaply (tenth hostile re-run, S2: another user's
//! 2 M descriptors held a root run's start for 9.4 s, a stop request for 7.7 s, a run's drain
//! side for 7 s, and `report` of a killed run for 17 s, each walking them all). So the search is
//! bounded three ways: it looks only at the processes of the users who can open the file (from
//! its mode: one that only its owner can open is looked for among its owner's processes and
//! root's), it looks first at the process the kernel names (the locker /proc/locks lists), and
//! it ends at a deadline shared by every file looked for through one [`Search`] (the first
//! process included: its caller names the locker from /proc/locks alone when the search did not
//! reach it). Cut short, it says so ([`Search::note`]): a holder it did not reach is said as not
//! searched for, never as absent. A descriptor handed to a process of a user who could not have opened the file (sent
//! over a socket, or kept across a change of user) is not looked for.

use std::fs::DirEntry;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Whose processes can hold a file open, from its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Openers {
    /// Its group or others may open it: any process.
    Anyone,
    /// Only its owner (the uid) and root.
    Owner(u32),
}

impl Openers {
    /// The openers of a file whose `meta` this is, for opens that need the permission bits
    /// `bits` (of the owner's triplet: 0o4 to read, 0o6 to read or write; the group's and
    /// others' are looked at).
    pub(crate) fn of(meta: &std::fs::Metadata, bits: u32) -> Openers {
        let others_or_group = (bits & 0o7) | ((bits & 0o7) << 3);
        match meta.mode() & others_or_group {
            0 => Openers::Owner(meta.uid()),
            _ => Openers::Anyone,
        }
    }

    fn may_open(self, uid: u32) -> bool {
        match self {
            Openers::Anyone => true,
            Openers::Owner(owner) => uid == owner || uid == 0,
        }
    }
}

/// A search of /proc with one deadline, shared by every file looked for through it.
#[derive(Debug)]
pub(crate) struct Search {
    budget: Duration,
    deadline: Instant,
    /// The deadline passed before every candidate process was looked at.
    cut_short: bool,
}

/// How many descriptors are looked at between two readings of the clock.
const DESCRIPTORS_PER_CLOCK_READ: usize = 64;

impl Search {
    /// A search that gives up `budget` from now.
    pub(crate) fn new(budget: Duration) -> Search {
        Search {
            budget,
            deadline: Instant::now() + budget,
            cut_short: false,
        }
    }

    /// Whether the deadline passed before every candidate process was looked at.
    pub(crate) fn cut_short(&self) -> bool {
        self.cut_short
    }

    /// For a message naming what the search found, when it was cut short: what was not looked
    /// at (None when every candidate was).
    pub(crate) fn note(&self) -> Option<String> {
        self.cut_short.then(|| {
            format!(
                "the search of /proc for the processes holding it stopped after {} ms, so others may hold it too",
                self.budget.as_millis()
            )
        })
    }

    fn out_of_time(&mut self) -> bool {
        if !self.cut_short && Instant::now() >= self.deadline {
            self.cut_short = true;
        }
        self.cut_short
    }

    /// The processes of `proc` but `skip` that `openers` allows and that have a descriptor for
    /// which `is_it(process directory, descriptor entry)` is true, in pid order; `first` (the
    /// process the kernel names, whoever it belongs to) is looked at first, with the whole
    /// budget left.
    pub(crate) fn processes_with(
        &mut self,
        proc: &Path,
        first: Option<u32>,
        openers: Openers,
        skip: Option<u32>,
        is_it: &dyn Fn(&Path, &DirEntry) -> bool,
    ) -> Vec<u32> {
        let mut found = Vec::new();
        if let Some(pid) = first.filter(|&p| Some(p) != skip)
            && self.holds(proc, pid, is_it)
        {
            found.push(pid);
        }
        let Ok(processes) = std::fs::read_dir(proc) else {
            return found;
        };
        for process in processes.flatten() {
            if self.out_of_time() {
                break;
            }
            let Some(pid) = process
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if Some(pid) == skip || Some(pid) == first {
                continue;
            }
            // /proc/PID belongs to the process's effective uid (root's when it is not
            // dumpable: looked at, then).
            if openers != Openers::Anyone
                && !process.metadata().is_ok_and(|m| openers.may_open(m.uid()))
            {
                continue;
            }
            if self.holds(proc, pid, is_it) {
                found.push(pid);
            }
        }
        found.sort_unstable();
        found
    }

    /// Whether process `pid` has a descriptor `is_it` recognises (false when it cannot be read,
    /// or the deadline passed while its descriptors were looked at).
    fn holds(&mut self, proc: &Path, pid: u32, is_it: &dyn Fn(&Path, &DirEntry) -> bool) -> bool {
        let dir = proc.join(pid.to_string());
        let Ok(descriptors) = std::fs::read_dir(dir.join("fd")) else {
            return false;
        };
        for (i, fd) in descriptors.flatten().enumerate() {
            if i % DESCRIPTORS_PER_CLOCK_READ == 0 && self.out_of_time() {
                return false;
            }
            if is_it(&dir, &fd) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fixture /proc: processes 10, 20 and 30, each with descriptors named after what they
    /// "hold" (a file per descriptor, holding the name of the file it stands for).
    fn fixture(dir: &Path) {
        for (pid, files) in [(10, &["a", "b"][..]), (20, &["b"]), (30, &["c", "b"])] {
            let fd = dir.join(format!("{pid}/fd"));
            std::fs::create_dir_all(&fd).unwrap();
            for (n, f) in files.iter().enumerate() {
                std::fs::write(fd.join(n.to_string()), f).unwrap();
            }
        }
        std::fs::create_dir_all(dir.join("self")).unwrap();
    }

    fn holds_b(_: &Path, fd: &DirEntry) -> bool {
        std::fs::read_to_string(fd.path()).is_ok_and(|t| t == "b")
    }

    #[test]
    fn every_process_holding_the_file_is_found_in_pid_order_but_the_one_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        fixture(tmp.path());
        let mut search = Search::new(Duration::from_secs(10));
        let found = search.processes_with(tmp.path(), None, Openers::Anyone, None, &holds_b);
        assert_eq!(found, vec![10, 20, 30]);
        let found =
            search.processes_with(tmp.path(), Some(30), Openers::Anyone, Some(20), &holds_b);
        assert_eq!(found, vec![10, 30]);
        assert!(!search.cut_short() && search.note().is_none());
    }

    #[test]
    fn a_spent_budget_looks_no_further_and_says_it_was_cut_short() {
        let tmp = tempfile::tempdir().unwrap();
        fixture(tmp.path());
        let mut search = Search::new(Duration::ZERO);
        let found = search.processes_with(tmp.path(), Some(20), Openers::Anyone, None, &holds_b);
        assert!(found.is_empty(), "{found:?}");
        assert!(search.cut_short());
        let note = search.note().unwrap();
        assert!(note.contains("stopped after 0 ms"), "{note}");
    }

    #[test]
    fn a_file_only_its_owner_can_open_is_looked_for_among_its_owners_and_roots_processes() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        let set = |mode| std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode));
        set(0o600).unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let owner = meta.uid();
        assert_eq!(Openers::of(&meta, 0o6), Openers::Owner(owner));
        assert!(Openers::Owner(owner).may_open(owner) && Openers::Owner(owner).may_open(0));
        assert!(!Openers::Owner(1000).may_open(1001));
        set(0o644).unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        // Others may read it: a read open (a lock) is anyone's, a write open (the device's
        // request) the owner's.
        assert_eq!(Openers::of(&meta, 0o4), Openers::Anyone);
        assert_eq!(Openers::of(&meta, 0o2), Openers::Owner(owner));
        set(0o660).unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(Openers::of(&meta, 0o2), Openers::Anyone);
    }
}
