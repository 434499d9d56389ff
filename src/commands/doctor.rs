//! `jitterlab doctor`: the readiness checks of `system::doctor`.

use crate::cli::DoctorArgs;
use crate::error::Result;

pub fn run(args: &DoctorArgs) -> Result<i32> {
    crate::system::doctor::run(args.json, args.cpus.as_deref())
}
