//! Speed of the OpenAI client's server-sent-event line splitting
//! (`worldloom_engine::openai::SseLineReader`) on the input that used to be
//! quadratic: one long line arriving in many small chunks. Also a stream of
//! ordinary short events, for comparison.
//!
//! ```text
//! cargo bench -p worldloom-engine --bench sse_lines -- [--chunk-bytes 1024]
//! ```
//!
//! Prints one Markdown table row per input: its size, the time to split it
//! (best of 3), throughput, and the bytes scanned for newlines (equal to the
//! input size when the reader is linear).

use std::time::{Duration, Instant};

use worldloom_engine::openai::SseLineReader;

/// Splits `input` pushed in `chunk` byte pieces; returns the best time of
/// three runs, the bytes scanned and the lines read.
fn split(input: &[u8], chunk: usize) -> (Duration, u64, usize) {
    let mut best = Duration::MAX;
    let mut scanned = 0;
    let mut lines = 0;
    for _ in 0..3 {
        let started = Instant::now();
        let mut reader = SseLineReader::new(64 * 1024 * 1024);
        let mut count = 0;
        for piece in input.chunks(chunk) {
            reader.push(piece);
            while let Some(line) = reader.next_line() {
                let line = line.expect("the bench input is valid");
                count += usize::from(!line.is_empty());
            }
        }
        best = best.min(started.elapsed());
        scanned = reader.scanned_bytes();
        lines = count;
    }
    (best, scanned, lines)
}

fn main() {
    let mut chunk = 1024usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--chunk-bytes" {
            chunk = args
                .next()
                .and_then(|v| v.parse().ok())
                .filter(|&v| v > 0)
                .expect("--chunk-bytes needs a positive number");
        }
    }
    println!("| input | bytes | chunks of | time (best of 3) | MB/s | bytes scanned |");
    println!("|---|---|---|---|---|---|");
    for mib in [1usize, 8, 32] {
        let mut input = b"data: ".to_vec();
        input.resize(mib * 1024 * 1024, b'x');
        input.extend_from_slice(b"\n\n");
        report(&format!("one {mib} MiB line"), &input, chunk);
    }
    let event = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token\"},\"finish_reason\":null}]}\n\n";
    let input: Vec<u8> = event
        .iter()
        .copied()
        .cycle()
        .take(event.len() * 400_000)
        .collect();
    report("400,000 short events", &input, chunk);
}

fn report(name: &str, input: &[u8], chunk: usize) {
    let (time, scanned, lines) = split(input, chunk);
    assert!(lines > 0);
    let mb_s = input.len() as f64 / 1e6 / time.as_secs_f64();
    println!(
        "| {name} | {} | {chunk} | {:.1} ms | {mb_s:.0} | {scanned} |",
        input.len(),
        time.as_secs_f64() * 1000.0
    );
}
