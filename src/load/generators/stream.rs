//! `stream`: memory bandwidth, as John McCalpin's STREAM measures it with its triad kernel
//! `a[i] = b[i] + s * c[i]`. Each worker is a thread with three arrays of `size` bytes of f64
//! (64 MiB each by default, larger than any last-level cache, so the traffic goes to DRAM) and
//! runs the triad over them until stopped. Traffic is counted as STREAM counts it: 3 arrays x
//! 8 bytes per element per triad (two reads and a write; the write-allocate read is not
//! counted), in MB/s of 10^6 bytes.
//!
//! The triad runs in chunks of [`CHUNK`] elements; after each, the worker adds the chunk's
//! bytes to its counter and looks at the stop flag: one atomic add and one load per 768 KiB of
//! traffic.

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, Parameter, Syntax};
use crate::load::spec::Params;
use crate::load::worker_kit::{Counts, Ctx, mib, run_threads};

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "stream",
    about: "memory bandwidth: STREAM's triad a[i] = b[i] + s*c[i] over arrays larger than the caches",
    syntax: Syntax::Parameters,
    parameters: &[Parameter {
        name: "size",
        default: "64M",
        help: "bytes of each of a worker's three arrays (4 KiB - 16 TiB)",
    }],
    counters: &["bytes", "passes"],
    loop_unit: None,
    parse: |p| Ok(Box::new(StreamLoad::parse(p)?)),
};
const BYTES: usize = 0;
const PASSES: usize = 1;
/// Elements per chunk between counter updates and stop checks (256 KiB of each array).
const CHUNK: usize = 1 << 15;
/// Bytes of memory traffic per element of a triad, as STREAM counts them.
const BYTES_PER_ELEMENT: u64 = 3 * std::mem::size_of::<f64>() as u64;
/// STREAM's scalar.
const SCALAR: f64 = 3.0;

#[derive(Debug)]
struct StreamLoad {
    /// Bytes of each array.
    size: u64,
}

impl StreamLoad {
    fn parse(p: &mut Params) -> Result<Self, String> {
        Ok(StreamLoad {
            size: p.bytes("size", 4096..=(1 << 44), 64 << 20)?,
        })
    }

    /// An array of `n` elements, every page written (so that the first triad does not time
    /// page faults); an error rather than an abort when memory is short.
    fn array(&self, n: usize, value: f64, worker: usize) -> Result<Vec<f64>, String> {
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|e| {
            format!(
                "stream worker {worker}: cannot allocate an array of {}: {e}",
                mib(self.size as u128)
            )
        })?;
        v.resize(n, value);
        Ok(v)
    }
}

impl Generator for StreamLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    /// Three arrays per worker.
    fn memory_bytes_per_worker(&self) -> u64 {
        3 * self.size
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
        let n = (self.size / std::mem::size_of::<f64>() as u64) as usize;
        run_threads(ctx.workers, "stream", |i| {
            let mut a = self.array(n, 1.0, i)?;
            let b = self.array(n, 2.0, i)?;
            let c = self.array(n, 0.5, i)?;
            while !ctx.stopped() {
                for ((a, b), c) in a
                    .chunks_mut(CHUNK)
                    .zip(b.chunks(CHUNK))
                    .zip(c.chunks(CHUNK))
                {
                    triad(a, b, c);
                    ctx.add(BYTES, a.len() as u64 * BYTES_PER_ELEMENT);
                    if ctx.stopped() {
                        return Ok(());
                    }
                }
                ctx.add(PASSES, 1);
            }
            Ok(())
        })
    }

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![
            c.rate("triad", c.get(BYTES), 1e-6, "MB/s"),
            c.total("passes", c.get(PASSES), "passes"),
        ]
    }
}

/// `a[i] = b[i] + s * c[i]`; the result is handed to `black_box` so that the stores stay.
fn triad(a: &mut [f64], b: &[f64], c: &[f64]) {
    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
        *a = b + SCALAR * c;
    }
    std::hint::black_box(a);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_triad_is_streams() {
        let (mut a, b, c) = (vec![0.0; 5], vec![2.0; 5], vec![0.5; 5]);
        triad(&mut a, &b, &c);
        assert_eq!(a, vec![3.5; 5]);
        let mut p = Params::parse("stream:size=1M").unwrap();
        let s = StreamLoad::parse(&mut p).unwrap();
        assert_eq!(s.memory_bytes_per_worker(), 3 << 20);
        let counts = Counts::new(&[48_000_000, 2], 2_000_000_000);
        let t = s.throughput(&counts);
        assert_eq!((t[0].value, t[0].unit.as_str()), (Some(24.0), "MB/s"));
    }
}
