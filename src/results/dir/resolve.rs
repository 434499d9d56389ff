//! The directories of a user-named path, looked up one component at a time through directory
//! descriptors (issue 39 F1). The kernel, asked to open `/tmp/hh/sub/r.html`, follows a link
//! at `sub` whoever made it (unless `fs.protected_symlinks` stops it, and that only in sticky
//! world-writable directories): another user's link there sends the file into `/root`, or
//! into a directory of theirs where they replace it afterwards. Here each component is opened
//! with `O_PATH|O_NOFOLLOW`; a link is followed only when it belongs to this user (the
//! effective uid) or to root, whose links are as trustworthy as the directories that hold
//! them; another user's is refused, naming it and its owner. At most [`MAX_LINKS`] links are
//! followed, as the kernel's bound (ELOOP). What is written is then made through the
//! descriptor of the directory reached, so that a link planted after this lookup changes
//! nothing. Every output (result directories, `-o`, `--plots`, the drop-ins' files) goes
//! through here: `create.rs`, `outputs.rs` and `output_checks.rs` call nothing else to reach
//! a directory.

use super::*;
use crate::error::ExitCode;
use crate::sys::path::{Kind, Stat, open_entry, open_start, read_link, stat};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Component;

/// How many links a lookup follows before refusing (the kernel's MAXSYMLINKS, 40).
pub(super) const MAX_LINKS: u32 = 40;

/// How many directories up from a default result directory's parent are checked (deeper
/// trees than this do not exist on a real system; the bound keeps a loop finite).
const MAX_ANCESTORS: u32 = 1024;

/// Why a directory of a path could not be reached.
#[derive(Debug)]
pub(super) enum WalkError {
    /// A link of another user (not this one, not root): its path as looked up, its owner and
    /// where it points.
    ForeignLink(PathBuf, u32, OsString),
    /// More than [`MAX_LINKS`] links: the path as far as looked up.
    TooManyLinks(PathBuf),
    /// The last component is a link where a link is refused (`./jitterlab-results`).
    LastIsLink(PathBuf),
    /// Something on the way is not a directory.
    NotDir(PathBuf),
    /// Another error at that path (ENOENT when it must exist, EACCES...).
    Io(PathBuf, io::Error),
}

impl WalkError {
    /// Exit 2 (the path is wrong), or 3 when this user may not search a directory on the way.
    pub(super) fn exit_code(&self) -> ExitCode {
        match self {
            WalkError::Io(_, e) => ExitCode::of_io(e, ExitCode::Usage),
            _ => ExitCode::Usage,
        }
    }

    /// The reason in words, for a message that names the option and the path first.
    pub(super) fn reason(&self) -> String {
        match self {
            WalkError::ForeignLink(link, uid, to) => format!(
                "{} is a symbolic link of {} (to {}), neither yours nor root's: jitterlab follows no other user's link on the way to what it writes, since its owner chooses where it leads (into /root, or into a directory of theirs where they replace the results); if you trust it, pass the path it leads to",
                link.display(),
                crate::sys::process::user_in_words(*uid),
                Path::new(to).display()
            ),
            WalkError::TooManyLinks(at) => format!(
                "more than {MAX_LINKS} symbolic links to follow at {} (a loop?)",
                at.display()
            ),
            WalkError::LastIsLink(at) => format!("{} is a symbolic link", at.display()),
            WalkError::NotDir(at) => format!("{} is not a directory", at.display()),
            WalkError::Io(at, e) => format!("{}: {}", at.display(), describe(e)),
        }
    }
}

/// A directory a missing component of a path was made as: its parent's descriptor and its
/// name there, for removing it again (a run refused before it measured leaves nothing).
#[derive(Debug)]
pub(super) struct Made {
    pub parent: OwnedFd,
    pub name: CString,
}

/// A directory reached: its descriptor (`O_PATH`: enough for every `*at` call and for
/// `fstat`), its facts, and the path it was reached by (links replaced by their targets),
/// for messages.
#[derive(Debug)]
pub(super) struct Reached {
    pub fd: OwnedFd,
    pub stat: Stat,
    pub shown: PathBuf,
}

/// Whether a link of `uid` is followed: this user's, or root's.
pub(super) fn trusted_link_owner(uid: u32) -> bool {
    uid == crate::sys::process::effective_user_id() || uid == 0
}

/// The components of `path` to look up, in order (`.` dropped; `..` kept: looked up in the
/// directory reached, as the kernel does after a link).
fn components(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some("..".into()),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

/// Looks `path` up as far as it exists: the deepest directory reached, and the components
/// below it that do not exist yet (empty when the whole path does). Links are followed as
/// the module's comment says; unless `follow_last`, a link as the path's last component is
/// refused ([`WalkError::LastIsLink`]). Every component that exists must be a directory.
pub(super) fn walk_existing(
    path: &Path,
    follow_last: bool,
) -> Result<(Reached, Vec<OsString>), WalkError> {
    let absolute = path.has_root();
    let start = |abs: bool| {
        // Messages name directories by absolute paths (a relative one from the working
        // directory).
        let shown = match abs {
            true => PathBuf::from("/"),
            false => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        let fd = open_start(abs).map_err(|e| WalkError::Io(shown.clone(), e))?;
        let stat = stat(fd.as_fd()).map_err(|e| WalkError::Io(shown.clone(), e))?;
        Ok::<_, WalkError>(Reached { fd, stat, shown })
    };
    let mut at = start(absolute)?;
    let mut todo: VecDeque<OsString> = components(path).collect();
    // How many of `todo`'s last entries are the user's own path (not a link's target): the
    // last of those is the path's last component.
    let mut own_left = todo.len();
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        // The path's own last component (links' targets go in front of the path's own).
        let last = todo.is_empty() && own_left == 1;
        own_left = own_left.min(todo.len());
        let shown = if name == ".." {
            let mut s = at.shown.clone();
            match s.file_name() {
                Some(n) if n != ".." => drop(s.pop()),
                _ => s.push(".."),
            }
            s
        } else {
            at.shown.join(&name)
        };
        let fd = match open_entry(at.fd.as_fd(), &name) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut missing = vec![name];
                missing.extend(todo);
                return Ok((at, missing));
            }
            Err(e) => return Err(WalkError::Io(shown, e)),
        };
        let st = stat(fd.as_fd()).map_err(|e| WalkError::Io(shown.clone(), e))?;
        match st.kind {
            Kind::Dir => {
                at = Reached {
                    fd,
                    stat: st,
                    shown,
                }
            }
            Kind::Link if last && !follow_last => return Err(WalkError::LastIsLink(shown)),
            Kind::Link => {
                let target = read_link(fd.as_fd()).map_err(|e| WalkError::Io(shown.clone(), e))?;
                if !trusted_link_owner(st.uid) {
                    return Err(WalkError::ForeignLink(shown, st.uid, target));
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(WalkError::TooManyLinks(shown));
                }
                let target_path = Path::new(&target);
                if target_path.has_root() {
                    at = start(true)?;
                }
                for c in components(target_path)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                {
                    todo.push_front(c);
                }
            }
            Kind::File | Kind::Other => return Err(WalkError::NotDir(shown)),
        }
    }
    Ok((at, Vec::new()))
}

/// Looks the directory `path` up (see [`walk_existing`]), every component existing, or made
/// (mode 0755, as the result directory itself, less the umask) when `made` is given: the
/// directories made are appended to it, outermost first.
pub(super) fn walk_dir(
    path: &Path,
    follow_last: bool,
    made: Option<&mut Vec<Made>>,
) -> Result<Reached, WalkError> {
    let (mut at, missing) = walk_existing(path, follow_last)?;
    let Some(made) = made else {
        return match missing.first() {
            None => Ok(at),
            Some(name) => Err(WalkError::Io(
                at.shown.join(name),
                io::Error::from(io::ErrorKind::NotFound),
            )),
        };
    };
    for name in missing {
        let shown = at.shown.join(&name);
        if name == ".." {
            // Below a directory that did not exist: the kernel would say ENOENT too.
            return Err(WalkError::Io(
                shown,
                io::Error::from(io::ErrorKind::NotFound),
            ));
        }
        let c = cstr(&name).map_err(|e| WalkError::Io(shown.clone(), e))?;
        match make_dir_at(at.fd.as_fd(), &c, 0o755) {
            Ok(()) => made.push(Made {
                parent: at
                    .fd
                    .try_clone()
                    .map_err(|e| WalkError::Io(shown.clone(), e))?,
                name: c,
            }),
            // Made by another process meanwhile (a shared `jitterlab-results`): used if it
            // is a directory, as checked below.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(WalkError::Io(shown, e)),
        }
        let fd = open_entry(at.fd.as_fd(), &name).map_err(|e| WalkError::Io(shown.clone(), e))?;
        let st = stat(fd.as_fd()).map_err(|e| WalkError::Io(shown.clone(), e))?;
        if st.kind != Kind::Dir {
            // A link or a file put there between mkdir and open: not followed.
            return Err(WalkError::NotDir(shown));
        }
        at = Reached {
            fd,
            stat: st,
            shown,
        };
    }
    Ok(at)
}

/// Removes the directories `made` made, innermost first (only empty ones go).
pub(super) fn unmake(made: &[Made]) {
    for m in made.iter().rev() {
        let _ = unlink_at(m.parent.as_fd(), &m.name, Entry::Dir);
    }
}

/// Whether a directory owned by `uid` may hold a default result directory's parent chain:
/// this user's, root's, or, for root under sudo, the user who ran sudo (`SUDO_UID`: the
/// one who asked for this run, in whose home directory `sudo jitterlab run` is typed).
fn trusted_dir_owner(uid: u32) -> bool {
    let me = crate::sys::process::effective_user_id();
    uid == me
        || uid == 0
        || (me == 0
            && std::env::var("SUDO_UID")
                .ok()
                .and_then(|s| s.parse::<u32>().ok())
                == Some(uid))
}

/// Checks the directory `dir` and every directory above it, up to `/` (by `..`, as they are
/// on disk, whatever links led here): another user who owns one, or may write one that has no
/// sticky bit, can rename what is below it away and put their own in its place. For the
/// directories of a default name, which the user did not choose (issue 24 D08, issue 39 F1).
pub(super) fn check_ancestors(dir: &Reached) -> Result<(), (PathBuf, String)> {
    let root = open_start(true)
        .and_then(|fd| stat(fd.as_fd()))
        .map_err(|e| (PathBuf::from("/"), e.to_string()))?;
    let mut fd = dir
        .fd
        .try_clone()
        .map_err(|e| (dir.shown.clone(), e.to_string()))?;
    let mut st = dir.stat;
    let mut shown = dir.shown.clone();
    for _ in 0..MAX_ANCESTORS {
        if !trusted_dir_owner(st.uid) {
            return Err((
                shown,
                format!(
                    "belongs to {} (not you, nor root)",
                    crate::sys::process::user_in_words(st.uid)
                ),
            ));
        }
        if st.mode & 0o022 != 0 && st.mode & 0o1000 == 0 {
            return Err((
                shown,
                format!(
                    "is writable by other users (mode {:04o}, no sticky bit)",
                    st.mode & 0o7777
                ),
            ));
        }
        if (st.dev, st.ino) == (root.dev, root.ino) {
            return Ok(());
        }
        let up =
            open_entry(fd.as_fd(), OsStr::new("..")).map_err(|e| (shown.clone(), e.to_string()))?;
        let up_st = stat(up.as_fd()).map_err(|e| (shown.clone(), e.to_string()))?;
        if (up_st.dev, up_st.ino) == (st.dev, st.ino) {
            // The top of this mount namespace's tree (a chroot's root).
            return Ok(());
        }
        (fd, st) = (up, up_st);
        shown = shown.join("..");
    }
    Ok(())
}

/// A path of the directory `fd` that the kernel resolves to that very directory
/// (`/proc/self/fd/N`), for the checks that take a path (access, statfs).
pub(super) fn fd_path(fd: BorrowedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn own_links_are_followed_bounded_and_dot_dot_is_physical() {
        let base = tempfile::tempdir().unwrap();
        let b = base.path();
        fs::create_dir_all(b.join("real/deep")).unwrap();
        symlink(b.join("real"), b.join("abs")).unwrap();
        symlink("real/deep", b.join("rel")).unwrap();
        let (r, missing) = walk_existing(&b.join("abs/deep/x/y"), true).unwrap();
        assert_eq!(missing, vec![OsString::from("x"), "y".into()]);
        let real = fs::metadata(b.join("real/deep")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!((r.stat.dev, r.stat.ino), (real.dev(), real.ino()));
        // `rel/..` is real/, where `rel` points, not the directory holding `rel`.
        let (r, _) = walk_existing(&b.join("rel/.."), true).unwrap();
        let want = fs::metadata(b.join("real")).unwrap();
        assert_eq!(r.stat.ino, want.ino());
        assert!(matches!(
            walk_existing(&b.join("abs"), false),
            Err(WalkError::LastIsLink(_))
        ));
        // A loop ends at the bound.
        symlink(b.join("loop2"), b.join("loop1")).unwrap();
        symlink(b.join("loop1"), b.join("loop2")).unwrap();
        assert!(matches!(
            walk_existing(&b.join("loop1/x"), true),
            Err(WalkError::TooManyLinks(_))
        ));
        fs::write(b.join("file"), "x").unwrap();
        assert!(matches!(
            walk_existing(&b.join("file/x"), true),
            Err(WalkError::NotDir(_))
        ));
        // Made when asked, and unmade.
        let mut made = Vec::new();
        let r = walk_dir(&b.join("abs/n1/n2"), true, Some(&mut made)).unwrap();
        assert_eq!(made.len(), 2);
        assert!(b.join("real/n1/n2").is_dir());
        assert_eq!(r.stat.kind, Kind::Dir);
        unmake(&made);
        assert!(!b.join("real/n1").exists());
        // Relative to the working directory.
        let (r, _) = walk_existing(Path::new("."), true).unwrap();
        assert_eq!(r.stat.kind, Kind::Dir);
    }

    #[test]
    fn another_users_link_is_refused_naming_it_and_its_owner() {
        let base = tempfile::tempdir().unwrap();
        let b = base.path();
        fs::create_dir(b.join("real")).unwrap();
        symlink(b.join("real"), b.join("theirs")).unwrap();
        if std::os::unix::fs::lchown(b.join("theirs"), Some(65534), Some(65534)).is_err() {
            eprintln!("skipped: giving a link to another user needs root");
            return;
        }
        let e = walk_existing(&b.join("theirs/x"), true).unwrap_err();
        let WalkError::ForeignLink(at, uid, _) = &e else {
            panic!("{e:?}")
        };
        assert_eq!((at.as_path(), *uid), (b.join("theirs").as_path(), 65534));
        assert!(e.reason().contains("65534"), "{}", e.reason());
        let mut made = Vec::new();
        assert!(walk_dir(&b.join("theirs/a/b"), true, Some(&mut made)).is_err());
        assert!(made.is_empty());
        assert_eq!(fs::read_dir(b.join("real")).unwrap().count(), 0);
    }
}
