//! `x @ wᵀ` for bf16 `x` [m, k] and bf16 `w` [n, k] on AMX tiles
//! (`tdpbf16ps`), for batches of at least [`MIN_ROWS`] input rows, on CPUs
//! with AMX-BF16 whose kernel grants the process the tile data (Linux:
//! `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`, asked once).
//!
//! One `tdpbf16ps` multiplies a 16 × 32 bf16 tile of `x` by a 32 × 16
//! tile of `wᵀ` held as 16 rows of 16 bf16 pairs (row `p`: elements `2p`
//! and `2p + 1` of 16 weight rows) into 16 × 16 f32 sums: 8,192
//! multiply-adds, against 32 for one `vdpbf16ps` (Intel's instruction
//! reference, "TDPBF16PS"). Each product of two bf16 is exact in f32, so
//! the sums are the f32 dot products of the widened operands up to the
//! order of the additions, as on the AVX512-BF16 path
//! ([`super::avx512_bf16`]); results are rounded to bf16 once, to nearest
//! even.
//!
//! Blocking: weight rows in panels of 32 (two 16-column tiles), repacked
//! per call into the tile layout ([`pack_panel`]: per 32-column block of
//! `k`, two 1 KiB tiles), each panel then meeting every 32-row block of
//! the input: tmm0–tmm3 hold the 2 × 2 accumulators, tmm4–tmm5 two input
//! tiles loaded in place (a tile load takes the row stride), tmm6–tmm7 the
//! panel's two weight tiles. A last partial group of 16 input rows is
//! copied into a zero-padded block first. Panels go in tasks over rayon
//! (each task configures the tiles of its thread and releases them).
//!
//! Allowed `unsafe`: the `arch_prctl` system call, the AMX instructions
//! (inline assembly: `std::arch` has no stable AMX intrinsics) and the
//! AVX-512 rounding of the results, entered only after [`available`]; the
//! tile loads and stores read and write inside slices whose sizes
//! [`matmul_bt`] asserts once.
#![allow(unsafe_code)]
// Off x86-64 only `available` (false) is reachable.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused_variables))]

use half::bf16;

/// The fewest input rows the AMX path takes (one input tile); fewer go to
/// the AVX512-BF16 kernels.
pub(crate) const MIN_ROWS: usize = 16;
/// Output columns per panel (two weight tiles).
const PANEL: usize = 32;
/// Panels per rayon task (one repacking buffer each).
const PANELS_PER_TASK: usize = 4;

/// Whether AMX-BF16 is usable: the CPU has AMX-TILE and AMX-BF16 (and the
/// AVX-512 the results are rounded with), the kernel granted the tile data
/// to this process, and `WORLDLOOM_CPU_AMX` is not `0` (for comparisons).
/// Decided once.
pub fn available() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        std::env::var("WORLDLOOM_CPU_AMX").as_deref() != Ok("0")
            && super::avx512_bf16::available()
            && granted()
    })
}

/// CPUID's AMX bits, then the permission request.
fn granted() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        // CPUID.(EAX=7, ECX=0):EDX bit 22 AMX-BF16, bit 24 AMX-TILE.
        let leaf = std::arch::x86_64::__cpuid_count(7, 0);
        let has = leaf.edx & (1 << 22) != 0 && leaf.edx & (1 << 24) != 0;
        // SAFETY: `arch_prctl` with ARCH_REQ_XCOMP_PERM only changes which
        // state components the process may use; it reads no memory.
        has && unsafe { imp::request_tile_data() }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

/// Whether [`matmul_bt`] takes this product: at least [`MIN_ROWS`] rows,
/// `k` a multiple of 32 and `n` of 32, on a CPU where [`available`].
pub(crate) fn applies(m: usize, k: usize, n: usize) -> bool {
    m >= MIN_ROWS
        && k > 0
        && k.is_multiple_of(32)
        && n > 0
        && n.is_multiple_of(PANEL)
        && available()
}

/// out [m, n] = x [m, k] · w [n, k]ᵀ, all row-major; sums in f32, the
/// result rounded to bf16. Panels over rayon with `parallel`, else on the
/// calling thread; the values are the same either way.
///
/// # Panics
/// If a slice is shorter than its shape or [`applies`] is false (the
/// caller checks it).
pub(crate) fn matmul_bt(
    x: &[bf16],
    w: &[bf16],
    (m, k, n): (usize, usize, usize),
    out: &mut [bf16],
    parallel: bool,
) {
    assert!(
        applies(m, k, n),
        "AMX kernel called for [{m}, {k}] × [{n}, {k}]ᵀ"
    );
    assert!(x.len() >= m * k && w.len() >= n * k && out.len() >= m * n);
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("`available` is false off x86-64");
    #[cfg(target_arch = "x86_64")]
    {
        let full = m / 16 * 16;
        let mut tail = Vec::new();
        if full < m {
            tail = vec![bf16::ZERO; 16 * k];
            tail[..(m - full) * k].copy_from_slice(&x[full * k..m * k]);
        }
        let ptr = super::disjoint::DisjointOut::new(out);
        let panels = n / PANEL;
        let task = |t: usize| {
            let mut packed = vec![0u32; k / 2 * PANEL];
            for panel in t * PANELS_PER_TASK..panels.min((t + 1) * PANELS_PER_TASK) {
                let j0 = panel * PANEL;
                pack_panel(&w[j0 * k..(j0 + PANEL) * k], k, &mut packed);
                let rows = imp::Rows {
                    x: x.as_ptr(),
                    full,
                    tail: tail.as_ptr(),
                    m,
                    k,
                };
                // SAFETY: `available` was asserted; `x` holds rows
                // 0..full and `tail` the zero-padded rest (16 rows), each
                // `k` wide; `packed` is this panel; output columns j0..j0 +
                // 32 of every row are this task's alone.
                unsafe { imp::panel(&rows, &packed, ptr.get().add(j0), n) };
            }
        };
        super::disjoint::run_tasks(panels.div_ceil(PANELS_PER_TASK), parallel, task);
    }
}

/// 32 weight rows (`w` [32, k]) in the weight-tile layout: per block `b`
/// of 32 columns of `k` and half `h` (rows 16h..16h + 16), a 1 KiB tile at
/// `u32` `(2b + h)·256` whose row `p` holds, for each of the 16 weight
/// rows `c`, elements `32b + 2p` (low half) and `32b + 2p + 1` of row
/// `16h + c`: a transpose of 16 × 16 bf16 pairs per tile, in registers
/// (16 loads, 64 shuffles, 16 stores; a gather per tile row before, and a
/// scalar loop before that, which was 2/3 of a bf16 prefill's matmul
/// time).
fn pack_panel(w: &[bf16], k: usize, packed: &mut [u32]) {
    assert!(w.len() == PANEL * k && packed.len() == k / 2 * PANEL && k.is_multiple_of(32));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `available` (AVX-512 F) holds wherever a panel is packed;
    // the sizes were asserted above.
    unsafe {
        imp::pack_panel(w, k, packed);
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::asm;
    use std::arch::x86_64::*;

    use half::bf16;

    use super::super::avx512_bf16::imp::round_bf16;

    /// Asks the kernel for the AMX tile data state (ARCH_REQ_XCOMP_PERM
    /// 0x1023, XFEATURE_XTILEDATA 18); true when granted.
    ///
    /// # Safety
    /// None beyond the system call's: it changes only which register
    /// state the process may use.
    #[cfg(target_os = "linux")]
    pub(super) unsafe fn request_tile_data() -> bool {
        const SYS_ARCH_PRCTL: i64 = 158;
        let ret: i64;
        // SAFETY: the syscall reads no memory; rcx and r11 are clobbered.
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL => ret,
                in("rdi") 0x1023_i64,
                in("rsi") 18_i64,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret == 0
    }

    /// [`super::pack_panel`]: tile row `p` of half `h` and block `b` is
    /// pair `16b + p` of the 16 weight rows `16h..16h + 16`, gathered with
    /// the rows' stride.
    ///
    /// # Safety
    /// AVX-512 F; `w` is [32, k] and `packed` `k / 2 · 32` long, `k` a
    /// multiple of 32.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pack_panel(w: &[bf16], k: usize, packed: &mut [u32]) {
        let pairs = k / 2;
        let src = w.as_ptr().cast::<u32>();
        let dst = packed.as_mut_ptr();
        for b in 0..k / 32 {
            for h in 0..2 {
                // SAFETY: row 16h + c's pairs 16b..16b + 16 lie inside `w`
                // ([32, k]: 32 rows of `pairs` u32); the 16 stores write the
                // tile's 16 rows of 16 u32 inside `packed`.
                unsafe {
                    let rows: [__m512i; 16] = std::array::from_fn(|c| {
                        _mm512_loadu_si512(src.add((16 * h + c) * pairs + 16 * b).cast())
                    });
                    let tile = transpose16(rows);
                    for (p, row) in tile.iter().enumerate() {
                        _mm512_storeu_si512(dst.add(((2 * b + h) * 16 + p) * 16).cast(), *row);
                    }
                }
            }
        }
    }

    /// The 16 × 16 transpose of 32-bit lanes: lane c of output p is lane p
    /// of input c. Pairs of rows interleaved (`vpunpck{l,h}dq`), then pairs
    /// of pairs (`vpunpck{l,h}qdq`): each 128-bit lane L then holds rows
    /// 4q..4q + 4 of one column 4L + x; a 4 × 4 transpose of those lanes
    /// (`vshufi32x4`) gathers a column's four row groups.
    #[inline(always)]
    unsafe fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
        // SAFETY: the caller has AVX-512 F (register operations only).
        unsafe {
            // by_x[x][q]: lane L holds rows 4q..4q + 4 of column 4L + x.
            let mut by_x = [[_mm512_setzero_si512(); 4]; 4];
            for q in 0..4 {
                let u0 = _mm512_unpacklo_epi32(r[4 * q], r[4 * q + 1]);
                let u1 = _mm512_unpackhi_epi32(r[4 * q], r[4 * q + 1]);
                let u2 = _mm512_unpacklo_epi32(r[4 * q + 2], r[4 * q + 3]);
                let u3 = _mm512_unpackhi_epi32(r[4 * q + 2], r[4 * q + 3]);
                by_x[0][q] = _mm512_unpacklo_epi64(u0, u2);
                by_x[1][q] = _mm512_unpackhi_epi64(u0, u2);
                by_x[2][q] = _mm512_unpacklo_epi64(u1, u3);
                by_x[3][q] = _mm512_unpackhi_epi64(u1, u3);
            }
            let mut out = [_mm512_setzero_si512(); 16];
            for (x, g) in by_x.iter().enumerate() {
                let c0 = _mm512_shuffle_i32x4::<0x44>(g[0], g[1]);
                let c1 = _mm512_shuffle_i32x4::<0xEE>(g[0], g[1]);
                let c2 = _mm512_shuffle_i32x4::<0x44>(g[2], g[3]);
                let c3 = _mm512_shuffle_i32x4::<0xEE>(g[2], g[3]);
                out[x] = _mm512_shuffle_i32x4::<0x88>(c0, c2);
                out[4 + x] = _mm512_shuffle_i32x4::<0xDD>(c0, c2);
                out[8 + x] = _mm512_shuffle_i32x4::<0x88>(c1, c3);
                out[12 + x] = _mm512_shuffle_i32x4::<0xDD>(c1, c3);
            }
            out
        }
    }

    /// The input of one product: rows 0..`full` in place at `x`, the rest
    /// (fewer than 16) in the zero-padded 16-row block at `tail`, `k` bf16
    /// a row.
    pub(super) struct Rows {
        pub(super) x: *const bf16,
        pub(super) full: usize,
        pub(super) tail: *const bf16,
        pub(super) m: usize,
        pub(super) k: usize,
    }

    impl Rows {
        /// The 16 rows from `i` (a multiple of 16).
        fn group(&self, i: usize) -> *const bf16 {
            if i < self.full {
                // SAFETY (of the callers' reads): rows i..i + 16 ≤ full.
                self.x.wrapping_add(i * self.k)
            } else {
                self.tail
            }
        }
    }

    /// The tile configuration (palette 1): eight tiles of 16 rows × 64
    /// bytes.
    #[repr(C, align(64))]
    struct TileConfig {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        colsb: [u16; 16],
        rows: [u8; 16],
    }

    /// Output columns `0..32` of every input row into `out` (row stride
    /// `ldo`): the panel's tiles against each 32-row block of the input.
    ///
    /// # Safety
    /// AMX-BF16 usable ([`super::available`]); `rows` as [`Rows`] says;
    /// `packed` one panel of `k / 32 · 2` tiles; `out` the panel's first
    /// column of row 0, columns 0..32 of rows 0..m writable by this call
    /// alone.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn panel(rows: &Rows, packed: &[u32], out: *mut bf16, ldo: usize) {
        let config = TileConfig {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            colsb: std::array::from_fn(|t| if t < 8 { 64 } else { 0 }),
            rows: std::array::from_fn(|t| if t < 8 { 16 } else { 0 }),
        };
        let (k, m) = (rows.k, rows.m);
        let stride = k * 2;
        let blocks = k / 32;
        debug_assert_eq!(packed.len(), blocks * 2 * 256);
        let w = packed.as_ptr();
        let mut sums = [0f32; 32 * 32];
        // SAFETY: the configuration is a valid palette-1 layout; every tile
        // load reads 16 rows of 64 bytes inside `rows` or `packed`, every
        // store writes inside `sums`; the tiles are released at the end.
        unsafe {
            asm!("ldtilecfg [{0}]", in(reg) &raw const config, options(nostack));
            let mut i = 0;
            while i < m {
                let two = m - i > 16;
                let (a0, a1) = (rows.group(i), rows.group(i + 16));
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    options(nostack, nomem)
                );
                for b in 0..blocks {
                    let (wa, wb) = (w.add(2 * b * 256), w.add((2 * b + 1) * 256));
                    asm!(
                        "tileloadd tmm4, [{a} + {s}*1]",
                        "tileloadd tmm6, [{wa} + {ws}*1]",
                        "tileloadd tmm7, [{wb} + {ws}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        a = in(reg) a0.add(32 * b),
                        s = in(reg) stride,
                        wa = in(reg) wa,
                        wb = in(reg) wb,
                        ws = in(reg) 64usize,
                        options(nostack, readonly)
                    );
                    if two {
                        asm!(
                            "tileloadd tmm5, [{a} + {s}*1]",
                            "tdpbf16ps tmm2, tmm5, tmm6",
                            "tdpbf16ps tmm3, tmm5, tmm7",
                            a = in(reg) a1.add(32 * b),
                            s = in(reg) stride,
                            options(nostack, readonly)
                        );
                    }
                }
                let c = sums.as_mut_ptr();
                asm!(
                    "tilestored [{c0} + {s}*1], tmm0",
                    "tilestored [{c1} + {s}*1], tmm1",
                    "tilestored [{c2} + {s}*1], tmm2",
                    "tilestored [{c3} + {s}*1], tmm3",
                    c0 = in(reg) c,
                    c1 = in(reg) c.add(16),
                    c2 = in(reg) c.add(16 * 32),
                    c3 = in(reg) c.add(16 * 32 + 16),
                    s = in(reg) 128usize,
                    options(nostack)
                );
                for r in 0..(m - i).min(32) {
                    let row = sums.as_ptr().add(r * 32);
                    let o = out.add((i + r) * ldo);
                    _mm256_storeu_si256(o.cast(), round_bf16(_mm512_loadu_ps(row)));
                    _mm256_storeu_si256(o.add(16).cast(), round_bf16(_mm512_loadu_ps(row.add(16))));
                }
                i += 32;
            }
            asm!("tilerelease", options(nostack, nomem));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f64 sums of the widened operands.
    fn reference(x: &[bf16], w: &[bf16], (m, k, n): (usize, usize, usize)) -> Vec<f64> {
        let mut out = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k)
                    .map(|c| f64::from(x[i * k + c].to_f32()) * f64::from(w[j * k + c].to_f32()))
                    .sum();
            }
        }
        out
    }

    fn values(len: usize, seed: f32) -> Vec<bf16> {
        (0..len)
            .map(|i| bf16::from_f32(((i as f32 * 0.7311 + seed).sin() * 4.3).fract() * 2.0))
            .collect()
    }

    /// The panel layout, on any CPU with AVX-512 F: tile (b, h) row p,
    /// lane c holds the bf16 pair 16b + p of weight row 16h + c, for
    /// distinct values at every position (a swapped lane, row or tile
    /// moves one).
    #[test]
    fn panels_pack_as_the_tile_layout_states() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let k = 96;
        let w: Vec<bf16> = (0..PANEL * k).map(|i| bf16::from_bits(i as u16)).collect();
        let mut packed = vec![0u32; k / 2 * PANEL];
        pack_panel(&w, k, &mut packed);
        let pairs = k / 2;
        for b in 0..k / 32 {
            for h in 0..2 {
                for p in 0..16 {
                    for c in 0..16 {
                        let pair = (16 * h + c) * pairs + 16 * b + p;
                        let want = u32::from(w[2 * pair].to_bits())
                            | (u32::from(w[2 * pair + 1].to_bits()) << 16);
                        let got = packed[((2 * b + h) * 16 + p) * 16 + c];
                        assert_eq!(got, want, "block {b}, half {h}, tile row {p}, lane {c}");
                    }
                }
            }
        }
    }

    /// On a CPU with AMX: every row count from one tile to several 32-row
    /// blocks with a partial last group (16, 17, 31, 32, 33, 50, 64), two
    /// panels and several `k` blocks, against f64 sums within a bf16
    /// rounding; the AVX512-BF16 kernel gives the same bits but for sums
    /// that differ in their last f32 bits (compared within one bf16 step).
    #[test]
    fn matches_the_widened_reference_and_the_avx512_kernel() {
        if !available() {
            return;
        }
        let (k, n) = (96, 64);
        for m in [16, 17, 31, 32, 33, 50, 64] {
            let (x, w) = (values(m * k, 0.3), values(n * k, 1.7));
            for parallel in [false, true] {
                let mut out = vec![bf16::ZERO; m * n];
                matmul_bt(&x, &w, (m, k, n), &mut out, parallel);
                let want = reference(&x, &w, (m, k, n));
                for (i, (g, r)) in out.iter().zip(&want).enumerate() {
                    let g = f64::from(g.to_f32());
                    assert!(
                        (g - r).abs() <= r.abs() * 2f64.powi(-8) + 1e-6,
                        "m {m} at {i}: {g} against {r}"
                    );
                }
                let mut simd = vec![bf16::ZERO; m * n];
                super::super::avx512_bf16::matmul_bt(&x, &w, (m, k, n), &mut simd, parallel);
                for (i, (a, b)) in out.iter().zip(&simd).enumerate() {
                    let step = (f64::from(b.to_f32()).abs() * 2f64.powi(-7)).max(1e-6);
                    assert!(
                        (f64::from(a.to_f32()) - f64::from(b.to_f32())).abs() <= step,
                        "m {m} at {i}: {a} against AVX-512 {b}"
                    );
                }
            }
        }
        assert!(!applies(15, k, n) && !applies(16, k + 16, n) && !applies(16, k, n + 16));
    }
}
