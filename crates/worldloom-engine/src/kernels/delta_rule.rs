//! The chunked gated delta rule (Gated DeltaNet's prefill) on the CPU, one
//! head per task, every product on [`super::f32_rows`]' tiles.
//!
//! The same algebra as the op-by-op form in `qwen3_5_moe::deltanet` (the
//! reference's `torch_chunk_gated_delta_rule`, the UT transform of Yang et
//! al., "Gated Delta Networks", 2024): per chunk of `C` tokens with
//! in-chunk cumulative log decays `cum`, `L[i][j] = (β_i k_i · k_j)
//! exp(cum_i − cum_j)` for `j < i`; `(I + L) X = [β v | β k exp(cum)]` by
//! forward substitution summed in f64 (the op-by-op form inverts `I + L`
//! and multiplies);
//! then, carrying the state `S` [d_k, d_v] from chunk to chunk,
//! `v' = X_v − X_k S`, `o = (q exp(cum)) S + tril(q kᵀ exp(cum_i −
//! cum_j)) v'`, `S ← S exp(cum_last) + (k exp(cum_last − cum))ᵀ v'`.
//!
//! What it removes: the op-by-op form ran each chunk's scan as candle ops
//! over all heads (a strided copy before each product, an `[H, C, C]`
//! temporary per step, the pool woken per op) and its intra-chunk products
//! through candle's gemm, which packs its operands on every call. Here a
//! head's chunk lives in a few `C × d` buffers reused from chunk to chunk,
//! `S` is kept transposed (`[d_v, d_k]`) so each product is `x · wᵀ` of
//! row-major operands, and the heads go over rayon's threads.
//!
//! Allowed `unsafe`: the one call of [`head`], compiled with AVX2 + FMA so
//! its element-wise loops vectorise, entered after [`available`].
#![allow(unsafe_code)]

use candle_core::{DType, Tensor};

use super::f32_rows;

/// Whether this CPU runs the kernel: [`f32_rows`]' AVX2 + FMA.
pub(crate) fn available() -> bool {
    f32_rows::available()
}

/// Widths of one call: heads, tokens, key and value widths, chunk length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RuleShape {
    /// Heads (each with its own state).
    pub heads: usize,
    /// Tokens.
    pub t: usize,
    /// Key (and query) width.
    pub dk: usize,
    /// Value width.
    pub dv: usize,
    /// Tokens per chunk (the last chunk may be shorter).
    pub chunk: usize,
}

/// The chunked rule over all heads: `q`, `k` [H, T, d_k] (q already scaled
/// by 1/√d_k), `v` [H, T, d_v], `g` (log decays, ≤ 0) and `beta` [H, T],
/// `state` [H, d_k, d_v], all row-major f32. Returns the outputs [H, T,
/// d_v] and the state after the last token [H, d_k, d_v].
///
/// # Panics
/// Where [`available`] is false, when a slice's length disagrees with the
/// shape, or when `chunk` is 0.
pub(crate) fn chunked_rule(
    (q, k, v): (&[f32], &[f32], &[f32]),
    (g, beta): (&[f32], &[f32]),
    state: &[f32],
    shape: RuleShape,
) -> (Vec<f32>, Vec<f32>) {
    let RuleShape {
        heads,
        t,
        dk,
        dv,
        chunk,
    } = shape;
    assert!(available(), "AVX2/FMA kernel called on a CPU without it");
    assert!(chunk > 0, "chunk of 0 tokens");
    assert!(q.len() == heads * t * dk && k.len() == q.len() && v.len() == heads * t * dv);
    assert!(g.len() == heads * t && beta.len() == g.len() && state.len() == heads * dk * dv);
    let mut out = vec![0f32; heads * t * dv];
    let mut states = vec![0f32; heads * dk * dv];
    let run = |(h, (out, st)): (usize, (&mut [f32], &mut [f32]))| {
        let inputs = HeadInputs {
            q: &q[h * t * dk..(h + 1) * t * dk],
            k: &k[h * t * dk..(h + 1) * t * dk],
            v: &v[h * t * dv..(h + 1) * t * dv],
            g: &g[h * t..(h + 1) * t],
            beta: &beta[h * t..(h + 1) * t],
            state: &state[h * dk * dv..(h + 1) * dk * dv],
        };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `available` (AVX2 + FMA) was asserted.
        unsafe {
            head(&inputs, shape, out, st)
        };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (inputs, out, st);
            unreachable!("`available` is false off x86-64");
        }
    };
    {
        use rayon::prelude::*;
        out.par_chunks_mut(t * dv)
            .zip(states.par_chunks_mut(dk * dv))
            .enumerate()
            .for_each(run);
    }
    (out, states)
}

/// [`chunked_rule`] on tensors: CPU f32 `q`, `k` [H, T, d_k], `v` [H, T,
/// d_v], `g`, `beta` [H, T], `state` [H, d_k, d_v] (made contiguous where
/// they are views); gives the outputs [H, T, d_v] and the new state.
/// `None` where it does not apply (another device or dtype, a CPU without
/// AVX2 + FMA), and the caller runs the op-by-op form.
///
/// # Errors
/// candle's errors (shapes that disagree among them).
pub(crate) fn try_chunked_rule(
    (q, k, v): (&Tensor, &Tensor, &Tensor),
    (g, beta): (&Tensor, &Tensor),
    state: &Tensor,
    chunk: usize,
) -> candle_core::Result<Option<(Tensor, Tensor)>> {
    let all = [q, k, v, g, beta, state];
    if !available()
        || all
            .iter()
            .any(|x| !x.device().is_cpu() || x.dtype() != DType::F32)
    {
        return Ok(None);
    }
    let (heads, t, dk) = q.dims3()?;
    let dv = v.dim(2)?;
    if k.dims() != [heads, t, dk]
        || v.dims() != [heads, t, dv]
        || g.dims() != [heads, t]
        || beta.dims() != [heads, t]
        || state.dims() != [heads, dk, dv]
    {
        candle_core::bail!(
            "delta rule inputs disagree: q {:?}, k {:?}, v {:?}, g {:?}, beta {:?}, state {:?}",
            q.dims(),
            k.dims(),
            v.dims(),
            g.dims(),
            beta.dims(),
            state.dims()
        );
    }
    if t == 0 {
        candle_core::bail!("delta rule over 0 tokens");
    }
    let all: Vec<Tensor> = all
        .iter()
        .map(|x| x.contiguous())
        .collect::<candle_core::Result<_>>()?;
    let guards: Vec<_> = all.iter().map(|x| x.storage_and_layout()).collect();
    let Some(slices) = guards
        .iter()
        .map(|(storage, layout)| super::host_slice::<f32>(storage, layout))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let shape = RuleShape {
        heads,
        t,
        dk,
        dv,
        chunk,
    };
    let (out, next) = chunked_rule(
        (slices[0], slices[1], slices[2]),
        (slices[3], slices[4]),
        slices[5],
        shape,
    );
    let device = q.device();
    Ok(Some((
        Tensor::from_vec(out, (heads, t, dv), device)?,
        Tensor::from_vec(next, (heads, dk, dv), device)?,
    )))
}

/// One head's inputs (slices of [`chunked_rule`]'s).
struct HeadInputs<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    g: &'a [f32],
    beta: &'a [f32],
    state: &'a [f32],
}

/// `dst` [cols, rows] = `src` [rows, cols]ᵀ.
#[inline(always)]
fn transpose(src: &[f32], rows: usize, cols: usize, dst: &mut [f32]) {
    for r in 0..rows {
        for c in 0..cols {
            dst[c * rows + r] = src[r * cols + c];
        }
    }
}

/// One head of [`chunked_rule`]: `out` [T, d_v], `state_out` [d_k, d_v].
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn head(x: &HeadInputs<'_>, shape: RuleShape, out: &mut [f32], state_out: &mut [f32]) {
    let RuleShape {
        t, dk, dv, chunk, ..
    } = shape;
    let c_max = chunk.min(t);
    // The state transposed, [d_v, d_k]: every product below is x · wᵀ.
    let mut st = vec![0f32; dv * dk];
    transpose(x.state, dk, dv, &mut st);
    let mut cum = vec![0f32; c_max];
    let mut kb = vec![0f32; c_max * dk]; // β k
    let mut a = vec![0f32; c_max * c_max]; // β k kᵀ, then L
    let mut qk = vec![0f32; c_max * c_max]; // q kᵀ, then the masked intra-chunk scores
    let mut xv = vec![0f32; c_max * dv]; // X's value half, then v'
    let mut xk = vec![0f32; c_max * dk]; // X's key half
    let mut x64 = vec![0f64; c_max * (dv + dk)]; // X in f64 while it is solved
    let mut qd = vec![0f32; c_max * dk]; // q exp(cum), then k exp(cum_last − cum)
    let mut w = vec![0f32; c_max * dv];
    let mut vt = vec![0f32; dv * c_max]; // v'ᵀ
    let mut kdt = vec![0f32; dk * c_max];
    let mut upd = vec![0f32; dv * dk];
    for r0 in (0..t).step_by(chunk) {
        let c = chunk.min(t - r0);
        let (q, k) = (&x.q[r0 * dk..(r0 + c) * dk], &x.k[r0 * dk..(r0 + c) * dk]);
        let v = &x.v[r0 * dv..(r0 + c) * dv];
        let mut run = 0f32;
        for (i, cum) in cum[..c].iter_mut().enumerate() {
            run += x.g[r0 + i];
            *cum = run;
        }
        let cum = &cum[..c];
        for i in 0..c {
            let b = x.beta[r0 + i];
            for (d, s) in kb[i * dk..(i + 1) * dk].iter_mut().zip(&k[i * dk..]) {
                *d = s * b;
            }
        }
        f32_rows::matmul_bt_serial(&kb[..c * dk], k, (c, dk, c), &mut a[..c * c]);
        f32_rows::matmul_bt_serial(q, k, (c, dk, c), &mut qk[..c * c]);
        // Decays: L strictly below the diagonal, the scores on and below it.
        for i in 0..c {
            for j in 0..c {
                let decay = if j <= i { (cum[i] - cum[j]).exp() } else { 0.0 };
                qk[i * c + j] *= decay;
                a[i * c + j] *= if j < i { decay } else { 0.0 };
            }
        }
        // (I + L) X = [β v | β k exp(cum)], row by row, summed in f64 (the
        // rows grow by up to C − 1 terms each).
        let width = dv + dk;
        for i in 0..c {
            let (b, e) = (f64::from(x.beta[r0 + i]), f64::from(cum[i].exp()));
            let (done, row) = x64.split_at_mut(i * width);
            let row = &mut row[..width];
            for (d, s) in row[..dv].iter_mut().zip(&v[i * dv..]) {
                *d = f64::from(*s) * b;
            }
            for (d, s) in row[dv..].iter_mut().zip(&kb[i * dk..]) {
                *d = f64::from(*s) * e;
            }
            for j in 0..i {
                let l = f64::from(a[i * c + j]);
                if l == 0.0 {
                    continue;
                }
                for (d, s) in row.iter_mut().zip(&done[j * width..(j + 1) * width]) {
                    *d -= l * s;
                }
            }
            for (d, s) in xv[i * dv..(i + 1) * dv].iter_mut().zip(&row[..dv]) {
                *d = *s as f32;
            }
            for (d, s) in xk[i * dk..(i + 1) * dk].iter_mut().zip(&row[dv..]) {
                *d = *s as f32;
            }
        }
        // v' = X_v − X_k S.
        f32_rows::matmul_bt_serial(&xk[..c * dk], &st, (c, dk, dv), &mut w[..c * dv]);
        for (d, s) in xv[..c * dv].iter_mut().zip(&w) {
            *d -= s;
        }
        transpose(&xv[..c * dv], c, dv, &mut vt[..dv * c]);
        // o = (q exp(cum)) S + scores · v'.
        for i in 0..c {
            let e = cum[i].exp();
            for (d, s) in qd[i * dk..(i + 1) * dk].iter_mut().zip(&q[i * dk..]) {
                *d = s * e;
            }
        }
        let o = &mut out[r0 * dv..(r0 + c) * dv];
        f32_rows::matmul_bt_serial(&qd[..c * dk], &st, (c, dk, dv), o);
        f32_rows::matmul_bt_serial(&qk[..c * c], &vt[..dv * c], (c, c, dv), &mut w[..c * dv]);
        for (d, s) in o.iter_mut().zip(&w) {
            *d += s;
        }
        // S ← S exp(cum_last) + (k exp(cum_last − cum))ᵀ v', transposed.
        let last = cum[c - 1];
        for i in 0..c {
            let e = (last - cum[i]).exp();
            for (d, s) in qd[i * dk..(i + 1) * dk].iter_mut().zip(&k[i * dk..]) {
                *d = s * e;
            }
        }
        transpose(&qd[..c * dk], c, dk, &mut kdt[..dk * c]);
        f32_rows::matmul_bt_serial(&vt[..dv * c], &kdt[..dk * c], (dv, c, dk), &mut upd);
        let decay = last.exp();
        for (d, s) in st.iter_mut().zip(&upd) {
            *d = *d * decay + s;
        }
    }
    transpose(&st, dv, dk, state_out);
}
