//! What is not a file at an output's name (issue 39 N7): a path to one of this process's own
//! descriptors (`/dev/stdout`) is written through it; a FIFO or character device is written in
//! place only when it is the caller's or root's; and a write into a pipe waits for its reader
//! only until a SIGINT or SIGTERM. The rule is [`super::write_output`]'s; `outputs.rs` applies
//! it at the claim and at the write.

use super::*;
use crate::error::ExitCode;
use crate::sys::path::{Special, Stat};

/// Why an output cannot go where its path leads: the exit code and the reason in words.
pub(super) type Refusal = (ExitCode, String);

/// Whether a special file `st` at an output's name (one that is not this process's own
/// descriptor) is written in place: a FIFO or character device of the caller's or root's is;
/// another user's is refused (issue 39 N7: its owner would read the output, or hold the FIFO
/// open without reading to stop the command), and so are a socket and a block device.
pub(super) fn check_special(st: &Stat) -> Result<(), Refusal> {
    let special = Special::of(st.mode).unwrap_or(Special::CharDevice);
    let what = special.words();
    match special {
        Special::BlockDevice => Err((
            ExitCode::Usage,
            format!(
                "is {what} (a disk or a partition): an output written into it would overwrite what the disk holds"
            ),
        )),
        Special::Socket => Err((
            ExitCode::Usage,
            format!("is {what}, a program's point of connection, which no file is written into"),
        )),
        _ if !trusted_link_owner(st.uid) => Err((
            ExitCode::Usage,
            format!(
                "is {what} of {}, neither yours nor root's: what jitterlab wrote into it would go to whoever reads it, and a reader that does not read would hold jitterlab; jitterlab writes in place only into a FIFO or device of yours or root's (or one you open for it: `-o /dev/stdout > PATH`)",
                crate::sys::process::user_in_words(st.uid)
            ),
        )),
        _ => Ok(()),
    }
}

/// A duplicate of this process's own writing descriptor that holds what `st` is (the same
/// device and inode), if one does: the lowest-numbered.
pub(super) fn own_descriptor(st: &Stat) -> Option<OwnedFd> {
    crate::sys::file::writing_descriptors()
        .into_iter()
        .find(|&(_, dev, ino)| (dev, ino) == (st.dev, st.ino))
        .and_then(|(fd, ..)| crate::sys::file::duplicate(fd).ok())
}

/// The FIFO or device `entry` (an `O_PATH` descriptor of the very entry claimed) opened for
/// writing, without blocking: one that no one has open for reading fails at once, said so
/// (ENXIO is "No such device or address").
pub(super) fn reopen_in_place(entry: BorrowedFd) -> io::Result<OwnedFd> {
    match crate::sys::path::reopen_for_writing(entry) {
        Ok(file) => Ok(OwnedFd::from(file)),
        Err(e) if e.raw_os_error() == Some(crate::sys::errno::ENXIO) => Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "it is a FIFO no one reads (nothing has it open for reading): start its reader first, or pass a file",
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A FIFO at `path`, made by mkfifo(1).
    fn fifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    #[test]
    fn another_users_fifo_is_refused_and_an_own_one_written_in_place() {
        let base = tempfile::tempdir().unwrap();
        let mine = base.path().join("mine");
        fifo(&mine);
        // A FIFO of one's own with no reader: said so, not "No such device or address".
        let claimed = OutputFile::claim(&mine, "--json", &[]).unwrap();
        let e = claimed.write_bytes(b"{}\n").unwrap_err();
        assert!(e.message.contains("a FIFO no one reads"), "{}", e.message);
        // With a reader, the bytes go to it, and the FIFO stays.
        let reader = crate::sys::fs::open_read_nonblocking(&mine, false).unwrap();
        claimed.write_bytes(b"{}\n").unwrap();
        let mut got = String::new();
        io::Read::read_to_string(&mut &reader, &mut got).unwrap();
        assert_eq!(got, "{}\n");
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::symlink_metadata(&mine).unwrap().file_type().is_fifo());
        // Another user's (issue 39 N7): refused before the work, naming its owner and kind,
        // named directly or by a link of one's own.
        let theirs = base.path().join("theirs");
        fifo(&theirs);
        if std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).is_err() {
            eprintln!("skipped: giving a FIFO to another user needs root");
            return;
        }
        let to_theirs = base.path().join("to-theirs");
        symlink(&theirs, &to_theirs).unwrap();
        for path in [&theirs, &to_theirs] {
            let e = OutputFile::claim(path, "--histfile", &[]).unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
            assert!(
                e.message.contains("is a FIFO of") && e.message.contains("65534"),
                "{}",
                e.message
            );
            let e = check_output_file(path, "-o", &[]).unwrap_err();
            assert!(
                e.message.contains("neither yours nor root's"),
                "{}",
                e.message
            );
            assert!(write_output(path, |w| w.write_all(b"x")).is_err());
        }
    }

    /// L4-e (issue 39): `--plots` replaced another user's FIFO planted at a plot's name,
    /// where `-o` refused it; one rule for both now.
    #[test]
    fn a_plot_directory_follows_the_writers_rule_for_a_fifo() {
        let base = tempfile::tempdir().unwrap();
        let plots = OutputDir::open_or_make(&base.path().join("plots"), "--plots").unwrap();
        let theirs = plots.path.join("cdf.svg");
        fifo(&theirs);
        let mine = plots.path.join("cdf.png");
        fifo(&mine);
        // One's own FIFO is written in place, as `-o`'s is.
        let reader = crate::sys::fs::open_read_nonblocking(&mine, false).unwrap();
        plots.write("cdf.png", b"png").unwrap();
        let mut got = String::new();
        io::Read::read_to_string(&mut &reader, &mut got).unwrap();
        assert_eq!(got, "png");
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::symlink_metadata(&mine).unwrap().file_type().is_fifo());
        if std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).is_err() {
            eprintln!("skipped: giving a FIFO to another user needs root");
            return;
        }
        let e = plots
            .check_names("--plots", ["new.svg", "cdf.svg"])
            .unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
        assert!(
            e.message.contains("cdf.svg is a FIFO of") && e.message.contains("neither yours"),
            "{}",
            e.message
        );
        let e = plots.write("cdf.svg", b"<svg/>").unwrap_err();
        assert!(e.to_string().contains("neither yours nor root's"), "{e}");
        let meta = fs::symlink_metadata(&theirs).unwrap();
        assert!(meta.file_type().is_fifo(), "her FIFO stays");
        // A file at a plot's name is still replaced.
        fs::write(plots.path.join("old.svg"), "old").unwrap();
        plots.write("old.svg", b"new").unwrap();
        assert_eq!(
            fs::read_to_string(plots.path.join("old.svg")).unwrap(),
            "new"
        );
    }

    #[test]
    fn a_write_into_a_pipe_no_one_reads_ends_at_a_stop_request() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("held");
        fifo(&path);
        // Held open for reading and never read (issue 39 N7: cyclictest's --histfile hung
        // past SIGINT and SIGTERM in the pipe write).
        let _reader = crate::sys::fs::open_read_nonblocking(&path, false).unwrap();
        let claimed = OutputFile::claim(&path, "--histfile", &[]).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(claimed.write_bytes(&vec![b'x'; 1 << 20]));
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(rx.try_recv().is_err(), "the pipe is full: the write waits");
        // What the SIGINT/SIGTERM handlers do (session::signals).
        crate::sys::signal::note_stop_request();
        let ended = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("the write still waits 5 s after a stop request");
        let e = ended.unwrap_err();
        assert!(
            e.message.contains("stopped by a SIGINT or SIGTERM"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_link_to_a_descriptor_of_this_process_is_written_through_it() {
        // `-o /dev/stdout > FILE` as root replaced the link /dev/stdout with the report: the
        // link led to a file, which the writer replaced by renaming over the link's name.
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("redirected");
        let held = fs::File::create(&file).unwrap();
        let link = base.path().join("stdout");
        symlink(format!("/proc/self/fd/{}", held.as_raw_fd()), &link).unwrap();
        write_output(&link, |w| w.write_all(b"report")).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(&file).unwrap(), "report");
        // And named as /proc/self/fd/N, which is on proc (no file is made there).
        let proc_path = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
        let claimed = OutputFile::claim(&proc_path, "-o", &[]).unwrap();
        claimed.write_bytes(b" again").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "report again");
        drop(held);
        // The link to a file no descriptor holds is replaced, as before.
        write_output(&link, |w| w.write_all(b"new")).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(fs::read_to_string(&file).unwrap(), "report again");
    }
}
