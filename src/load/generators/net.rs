//! `net`: TCP streams over the loopback interface, and only over it (the listener binds
//! 127.0.0.1 and the senders connect there), so the load never leaves the machine. Each
//! connection has a sender thread writing messages of `size` bytes as fast as the stack takes
//! them and a receiver thread reading them (Netperf's TCP_STREAM, in miniature).

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, Parameter, Syntax};
use crate::load::spec::Params;
use crate::load::worker_kit::{Counts, Ctx, run_threads};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "net",
    about: "TCP streams over the loopback interface, and only over it",
    syntax: Syntax::Parameters,
    parameters: &[
        Parameter {
            name: "conns",
            default: "1",
            help: "connections per worker (1-1024)",
        },
        Parameter {
            name: "size",
            default: "64K",
            help: "bytes per write (1 B - 16 MiB)",
        },
    ],
    counters: &["received", "sent"],
    loop_unit: None,
    parse: |p| Ok(Box::new(NetLoad::parse(p)?)),
};
const RECEIVED: usize = 0;
const SENT: usize = 1;
/// The only address the load uses.
pub(crate) const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

#[derive(Debug)]
struct NetLoad {
    /// Connections per worker.
    pub(crate) conns: usize,
    /// Bytes per write.
    pub size: u64,
}

impl NetLoad {
    fn parse(p: &mut Params) -> Result<Self, String> {
        Ok(NetLoad {
            conns: p.int("conns", 1..=1024, Some(1))?.unwrap() as usize,
            size: p.bytes("size", 1..=(16 << 20), 64 << 10)?,
        })
    }
}

impl Generator for NetLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    /// A sending and a receiving thread per connection.
    fn tasks_per_worker(&self) -> u64 {
        2 * self.conns as u64
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
        run_threads(ctx.workers * self.conns, "net", |i| {
            let listener = TcpListener::bind(SocketAddrV4::new(LOOPBACK, 0))
                .map_err(|e| format!("net connection {i}: cannot listen on 127.0.0.1: {e}"))?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            let mut sender = TcpStream::connect(addr)
                .map_err(|e| format!("net connection {i}: cannot connect to {addr}: {e}"))?;
            let (mut receiver, _) = listener
                .accept()
                .map_err(|e| format!("net connection {i}: accept failed: {e}"))?;
            drop(listener);
            let size = self.size as usize;
            std::thread::scope(|s| {
                let rx = std::thread::Builder::new()
                    .name(format!("jl-net-rx-{i}"))
                    .spawn_scoped(s, move || {
                        let mut buf = vec![0u8; size.max(64 << 10)];
                        loop {
                            match receiver.read(&mut buf) {
                                Ok(0) => return Ok(()),
                                Ok(n) => ctx.add(RECEIVED, n as u64),
                                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                                Err(e) => {
                                    return Err(format!("net connection {i}: read failed: {e}"));
                                }
                            }
                        }
                    })
                    .map_err(|e| e.to_string())?;
                let message = vec![0x5Au8; size];
                while !ctx.stopped() {
                    sender
                        .write_all(&message)
                        .map_err(|e| format!("net connection {i}: write failed: {e}"))?;
                    ctx.add(SENT, size as u64);
                }
                drop(sender);
                rx.join()
                    .unwrap_or_else(|_| Err("a net receiver panicked".into()))
            })
        })
    }

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![
            c.rate("received", c.get(RECEIVED), 8e-6, "Mbit/s"),
            c.total("bytes received", c.get(RECEIVED), "bytes"),
        ]
    }
}
