//! `--cpuset-partition`: the measuring threads in a cpuset of their own for the run, as a
//! production system partitions its real-time CPUs.
//!
//! Two kinds, by the cgroup version the machine has (docs/user-guide.md):
//! - a cgroup v1 cpuset hierarchy at `/sys/fs/cgroup/cpuset` (`v1.rs`): a child cpuset,
//!   exclusive and without load balancing of its own;
//! - where there is none and cgroup2 offers the cpuset controller (`v2.rs`): a threaded child
//!   cgroup of the process's own cgroup made an `isolated` partition
//!   (`cpuset.cpus.partition`), so that only the measuring threads move into it.
//!
//! Either is named `jitterlab-<pid>`, journaled before it is made (session/journal.rs),
//! removed when the run ends, and removed at the next start after a SIGKILL by its kind's
//! `undo` (session/stale.rs), recognised by its journal and inode, never by its name.

pub(crate) mod v1;
pub(crate) mod v2;

pub(crate) use v1::{KIND, undo};

use crate::format::environment::CpusetPartitionRecord;
use std::path::Path;

/// The cgroup v1 cpuset hierarchy.
pub(crate) const CPUSET_V1: &str = "/sys/fs/cgroup/cpuset";
/// The name of a partition: this prefix and the pid of the jitterlab that made it.
pub(crate) const PREFIX: &str = "jitterlab-";

/// The partition made for this run, of either kind; removed on drop.
#[derive(Debug)]
pub(crate) enum CpusetPartition {
    V1(v1::V1Partition),
    V2(v2::V2Partition),
}

impl CpusetPartition {
    /// Makes the partition for `cpus`: on the v1 cpuset hierarchy where there is one, else on
    /// cgroup v2 where it offers the cpuset controller; refused with both reasons otherwise.
    pub(crate) fn create(cpus: &[usize]) -> Result<CpusetPartition, String> {
        let v1_root = Path::new(CPUSET_V1);
        if v1_root.join("cpuset.cpus").is_file() {
            return v1::V1Partition::create(v1_root, cpus).map(CpusetPartition::V1);
        }
        match v2::Place::of_this_process() {
            Ok(place) => v2::V2Partition::create(place, cpus).map(CpusetPartition::V2),
            Err(why) => Err(format!(
                "--cpuset-partition: no cgroup v1 cpuset hierarchy at {CPUSET_V1}, and {why}; mount one of them (`mount -t cgroup -o cpuset cpuset {CPUSET_V1}`, or cgroup2 with the cpuset controller) or leave the option out"
            )),
        }
    }

    /// Moves thread `tid` into the partition and pins it to `cpu` again.
    pub(crate) fn add_thread(&self, tid: i32, cpu: usize) -> Result<(), String> {
        match self {
            CpusetPartition::V1(p) => p.add_thread(tid, cpu),
            CpusetPartition::V2(p) => p.add_thread(tid, cpu),
        }
    }

    /// What run.json `environment.cpuset_partition` says of it.
    pub(crate) fn record(&self) -> CpusetPartitionRecord {
        match self {
            CpusetPartition::V1(p) => CpusetPartitionRecord {
                cgroup: "v1".into(),
                path: p.dir().display().to_string(),
                partition: None,
                enabled_in_parent: false,
            },
            CpusetPartition::V2(p) => p.record(),
        }
    }
}
