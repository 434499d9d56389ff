//! The files a recorder writes (latency.hlog and the optional sample log), behind one rule: the
//! first write error stops every file. It lives apart from the recorder because that rule, not
//! the draining, decides what a full disk leaves behind.

use crate::format::hlog::HlogWriter;
use crate::format::samplelog::SampleLogWriter;
use std::io;

/// The files a recorder writes. After the first write error (a full disk) nothing more is
/// written, so that a torn line stays the last one, while the statistics go on: the run still
/// ends with its summary and run.json.
pub(super) struct Files {
    hlog: HlogWriter,
    samples: Option<SampleLogWriter>,
    failed: bool,
    /// The write error, until a drain (or finish) hands it out.
    error: Option<io::Error>,
}

impl Files {
    pub(super) fn new(hlog: HlogWriter, samples: Option<SampleLogWriter>) -> Self {
        Files {
            hlog,
            samples,
            failed: false,
            error: None,
        }
    }

    /// Runs `f` on the writers unless a write has failed before; remembers its error.
    pub(super) fn write(
        &mut self,
        f: impl FnOnce(&mut HlogWriter, &mut Option<SampleLogWriter>) -> io::Result<()>,
    ) {
        if !self.failed
            && let Err(e) = f(&mut self.hlog, &mut self.samples)
        {
            self.failed = true;
            self.error = Some(e);
        }
    }

    /// Flushes the sample log, if there is one (latency.hlog is written through line by line).
    pub(super) fn flush_samples(&mut self) {
        self.write(|_, samples| samples.as_mut().map_or(Ok(()), |l| l.flush()));
    }

    /// The write error, the first time it is asked for.
    pub(super) fn new_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }
}
