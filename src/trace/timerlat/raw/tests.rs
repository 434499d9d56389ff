use super::*;
use crate::trace::format::{HeaderEvent, HeaderPage};
use crate::trace::timerlat::sample::{Context, Line, Sample, parse_line};

/// Linux 6.1's `events/ftrace/timerlat/format` layout (FTRACE_ENTRY timerlat_entry).
const FORMAT: &str = "name: timerlat
ID: 18
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned int seqnum;\toffset:8;\tsize:4;\tsigned:0;
\tfield:int context;\toffset:12;\tsize:4;\tsigned:1;
\tfield:u64 timer_latency;\toffset:16;\tsize:8;\tsigned:0;

print fmt: \"seq:%d\\tcontext:%d\\ttimer_latency:%llu\\n\", REC->seqnum, REC->context, REC->timer_latency
";

fn formats() -> Formats {
    Formats {
        header_page: HeaderPage::parse(
            "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
        )
        .unwrap(),
        header_event: HeaderEvent {
            type_len_bits: 5,
            time_delta_bits: 27,
            padding: 29,
            time_extend: 30,
            time_stamp: 31,
            data_max_type_len: 28,
        },
    }
}

/// One 24-byte record (6 words: type_len 6) at `delta` ns after the previous.
fn entry(data: &mut Vec<u8>, delta: u32, id: u16, pid: i32, seq: u32, context: i32, ns: u64) {
    data.extend((6 | (delta << 5)).to_ne_bytes());
    data.extend(id.to_ne_bytes());
    data.extend([0u8, 0u8]);
    data.extend(pid.to_ne_bytes());
    data.extend(seq.to_ne_bytes());
    data.extend(context.to_ne_bytes());
    data.extend(ns.to_ne_bytes());
}

fn page(timestamp: u64, commit_flags: u64, data: &[u8]) -> Vec<u8> {
    let mut page = vec![0u8; 4096];
    page[0..8].copy_from_slice(&timestamp.to_ne_bytes());
    page[8..16].copy_from_slice(&(data.len() as u64 | commit_flags).to_ne_bytes());
    page[16..16 + data.len()].copy_from_slice(data);
    page
}

#[test]
fn entries_become_the_kernels_text_and_parse_back_to_the_same_figures() {
    let e = EntryFormat::parse(FORMAT).unwrap();
    let mut data = Vec::new();
    entry(&mut data, 10, 18, 0, 41, 0, 3_999);
    entry(&mut data, 2_000, 18, 867, 41, 1, 11_700);
    entry(&mut data, 5, 7, 12, 1, 1, 99); // another event's record: skipped
    entry(&mut data, 1_000_000, 18, 0, 42, 0, 932);
    let mut lines = Vec::new();
    let ts0 = 54_029_327_000;
    page_lines(&formats(), &e, 1, &page(ts0, 0, &data), &mut lines).unwrap();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0].1,
        "          <idle>-0       [001]    54.029327: #41    context    irq timer_latency      3999 ns"
    );
    assert_eq!(lines[1].0, ts0 + 10 + 2_000);
    assert!(
        lines[1]
            .1
            .starts_with("           <...>-867     [001]    54.029329: #41 ")
    );
    let parsed: Vec<Line> = lines.iter().map(|(_, l)| parse_line(l)).collect();
    let sample = |seq, context, latency_ns| {
        Line::Sample(Sample {
            cpu: 1,
            seq,
            context,
            latency_ns,
        })
    };
    assert_eq!(
        parsed,
        vec![
            sample(41, Context::Irq, 3_999),
            sample(41, Context::Thread, 11_700),
            sample(42, Context::Irq, 932),
        ]
    );
}

#[test]
fn a_loss_before_the_page_comes_first_and_a_short_entry_is_refused() {
    let e = EntryFormat::parse(FORMAT).unwrap();
    let mut data = Vec::new();
    entry(&mut data, 1, 18, 0, 7, 0, 100);
    // The count stored after the data (RB_MISSED_STORED).
    let mut with_count = data.clone();
    with_count.extend(3u64.to_ne_bytes());
    let mut p = page(1_000, crate::trace::page::MISSED_EVENTS, &data);
    p[8..16].copy_from_slice(
        &(data.len() as u64
            | crate::trace::page::MISSED_EVENTS
            | crate::trace::page::MISSED_STORED)
            .to_ne_bytes(),
    );
    p[16..16 + with_count.len()].copy_from_slice(&with_count);
    let mut lines = Vec::new();
    page_lines(&formats(), &e, 2, &p, &mut lines).unwrap();
    assert_eq!(lines[0].1, "CPU:2 [LOST 3 EVENTS]");
    assert_eq!(
        parse_line(&lines[0].1),
        Line::Lost {
            cpu: 2,
            events: Some(3)
        }
    );
    let mut lines = Vec::new();
    page_lines(
        &formats(),
        &e,
        2,
        &page(1_000, crate::trace::page::MISSED_EVENTS, &data),
        &mut lines,
    )
    .unwrap();
    assert_eq!(lines[0].1, "CPU:2 [LOST EVENTS]");
    // A record of the tracer's id too short for its fields (4 words): an error, never a guess.
    let mut short = Vec::new();
    short.extend((4u32 | (1 << 5)).to_ne_bytes());
    short.extend(18u16.to_ne_bytes());
    short.extend([0u8; 14]);
    let err = page_lines(&formats(), &e, 0, &page(0, 0, &short), &mut Vec::new()).unwrap_err();
    assert!(err.0.contains("shorter than its format file"), "{err}");
}

#[test]
fn a_format_without_the_latency_is_refused() {
    let e = EntryFormat::parse(&FORMAT.replace("timer_latency;", "latency;")).unwrap_err();
    assert!(e.contains("timer_latency"), "{e}");
}

/// The timestamp of a text line (`SECONDS.MICROS:`) in us, and its sample (thread: true).
fn stamped(line: &str) -> Option<(u64, usize, u64, bool, u64)> {
    let Line::Sample(s) = parse_line(line) else {
        return None;
    };
    let ts = line
        .split_whitespace()
        .find_map(|t| t.strip_suffix(':').filter(|t| t.contains('.')))?;
    let (sec, us) = ts.split_once('.')?;
    let us = sec.trim().parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?;
    Some((us, s.cpu, s.seq, s.context == Context::Thread, s.latency_ns))
}

/// A capture from Debian's 6.1 RT kernel in the lab's guest (check 2): one second of the tracer
/// on both CPUs, its text as the kernel printed it (`trace`, which consumes nothing) and then
/// the same entries raw (each CPU's trace_pipe_raw pages) with that kernel's format files. Its
/// entry layout is not the one of the synthetic tests above (PREEMPT_RT adds
/// `common_preempt_lazy_count`, which moves every field): decoded with its own format file,
/// every page gives back exactly the kernel's text: the same 4048 samples, times, CPUs,
/// activations, contexts and latencies.
#[test]
fn a_guest_capture_decodes_to_the_kernels_own_text() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/timerlat/rt-6.1-raw");
    let formats = Formats::load(&dir).unwrap();
    let entry = EntryFormat::load(&dir).unwrap();
    assert_eq!(
        (entry.id, entry.seqnum.offset, entry.timer_latency.offset),
        (17, 12, 24)
    );
    let size = formats.header_page.page_size();
    let mut lines = Vec::new();
    for cpu in [0, 1] {
        let pages = std::fs::read(dir.join(format!("cpu{cpu}.bin"))).unwrap();
        assert_eq!(pages.len() % size, 0);
        for page in pages.chunks(size) {
            page_lines(&formats, &entry, cpu, page, &mut lines).unwrap();
        }
    }
    let text = std::fs::read_to_string(dir.join("capture.trace")).unwrap();
    let mut kernels: Vec<_> = text.lines().filter_map(stamped).collect();
    let mut ours: Vec<_> = lines.iter().map(|(_, l)| stamped(l).expect(l)).collect();
    assert_eq!(kernels.len(), 4048);
    assert_eq!(ours.len(), kernels.len(), "no entry lost, none made up");
    kernels.sort();
    ours.sort();
    assert_eq!(ours, kernels);
}
