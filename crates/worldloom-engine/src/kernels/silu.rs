//! The experts' activation, `SiLU(g) · u = g / (1 + e^−g) · u` (Qwen3.5-MoE's
//! `hidden_act` "silu" between the gate/up and the down projection), over
//! f32 rows on the vector forms of [`super::lanes`].
//!
//! The scalar form is candle's f32 `silu` followed by the product (libm's
//! `expf` per element: 3 % of a 4,096-token Q4_K_M prefill's samples when
//! the packed experts computed it that way). The vector form takes `e^−g`
//! as one `exp2(−g · log₂ e)` (the degree-7 polynomial of
//! [`super::lanes::Lanes::exp2`], its input capped at 126 so `2^x` stays
//! finite): relative error within 3e-7 + 10⁻⁷ · |g| of the exact value for
//! `g` above −87 (the rounding of `−g · log₂ e`: about 12 ulp at g = −20;
//! a few ulp for positive `g`). Below −87, where every exact value is under
//! 10⁻³⁶ · |u|, the vector form gives `g · u / (1 + 2^126)` (libm's form
//! gives a tiny value down to −88.7, then ±0); at g = −∞ it gives −∞ where
//! libm's gives NaN; NaN stays NaN.
#![cfg_attr(target_arch = "x86_64", allow(unsafe_code))]

/// `out[j] = g[j] / (1 + e^−g[j]) · u[j]` for every `j`, on
/// [`super::lanes::form`]'s registers (scalar where it is `None`).
///
/// # Panics
/// Where the three slices' lengths differ.
pub(crate) fn silu_times(g: &[f32], u: &[f32], out: &mut [f32]) {
    assert!(
        g.len() == u.len() && u.len() == out.len(),
        "silu_times: gate {}, up {}, out {} values",
        g.len(),
        u.len(),
        out.len()
    );
    #[cfg(target_arch = "x86_64")]
    if let Some(form) = super::lanes::form() {
        // SAFETY: `form` is supported here (`lanes::form` checks it); the
        // lengths are equal (asserted).
        unsafe { imp::on(form, g, u, out) };
        return;
    }
    scalar(g, u, out);
}

/// The scalar form: candle's f32 `silu`, then the product.
fn scalar(g: &[f32], u: &[f32], out: &mut [f32]) {
    for ((o, &g), &u) in out.iter_mut().zip(g).zip(u) {
        *o = g / (1.0 + (-g).exp()) * u;
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use crate::kernels::lanes::{Form, Lanes, Ymm, Zmm};

    /// [`body`] on `form`'s registers.
    ///
    /// # Safety
    /// The CPU has `form`'s features; the slices are equally long.
    pub(super) unsafe fn on(form: Form, g: &[f32], u: &[f32], out: &mut [f32]) {
        // SAFETY: the caller's.
        unsafe {
            match form {
                Form::Avx512 => avx512(g, u, out),
                Form::Avx2 => avx2(g, u, out),
            }
        }
    }

    /// # Safety
    /// As [`on`]; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512(g: &[f32], u: &[f32], out: &mut [f32]) {
        // SAFETY: the caller's.
        unsafe { body::<Zmm>(g, u, out) }
    }

    /// # Safety
    /// As [`on`]; the CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(g: &[f32], u: &[f32], out: &mut [f32]) {
        // SAFETY: the caller's.
        unsafe { body::<Ymm>(g, u, out) }
    }

    /// Whole vectors on `L`, the tail by [`super::scalar`].
    ///
    /// # Safety
    /// As [`on`]; L's features present.
    #[inline(always)]
    unsafe fn body<L: Lanes>(g: &[f32], u: &[f32], out: &mut [f32]) {
        let whole = g.len() / L::W * L::W;
        // SAFETY: the caller's features; each load and store is W floats
        // at j < whole ≤ every slice's length.
        unsafe {
            let neg_log2e = L::set1(-std::f32::consts::LOG2_E);
            let (one, cap) = (L::set1(1.0), L::set1(126.0));
            for j in (0..whole).step_by(L::W) {
                let gv = L::load(g.as_ptr().add(j));
                let e = L::exp2(L::min(L::mul(gv, neg_log2e), cap));
                let silu = L::div(gv, L::add(one, e));
                L::store(
                    out.as_mut_ptr().add(j),
                    L::mul(silu, L::load(u.as_ptr().add(j))),
                );
            }
        }
        super::scalar(&g[whole..], &u[whole..], &mut out[whole..]);
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Each form against an f64 reference from −87 to 88, with ±0,
        /// tiny and fractional gates and a scalar tail: within 3e-7
        /// relative (a few ulp), plus 1e-7 · |g| for negative gates (the
        /// vector forms' rounded exponent); below −87 at most
        /// g · u / (1 + 2^126), never NaN.
        #[test]
        fn each_form_follows_the_reference() {
            let n = 16 * 23 + 5;
            let mut g: Vec<f32> = (0..n)
                .map(|i| -87.0 + 175.0 * i as f32 / (n - 1) as f32)
                .collect();
            g[3] = 0.0;
            g[4] = -0.0;
            g[5] = 1e-30;
            g[6] = -3.5e-4;
            let u: Vec<f32> = (0..n)
                .map(|i| (i as f32 * 0.37).sin() * 3.0 + 0.5)
                .collect();
            let want: Vec<f64> = g
                .iter()
                .zip(&u)
                .map(|(&g, &u)| {
                    let g = f64::from(g);
                    g / (1.0 + (-g).exp()) * f64::from(u)
                })
                .collect();
            let mut forms: Vec<(&str, Vec<f32>)> = Vec::new();
            let mut scalar = vec![0f32; n];
            super::super::scalar(&g, &u, &mut scalar);
            forms.push(("scalar", scalar));
            for (form, name) in [(Form::Avx512, "avx512"), (Form::Avx2, "avx2")] {
                if !form.is_supported() {
                    continue;
                }
                let mut out = vec![0f32; n];
                // SAFETY: the form checked; equal lengths.
                unsafe { on(form, &g, &u, &mut out) };
                forms.push((name, out));
            }
            for (name, got) in &forms {
                for (j, (&o, &w)) in got.iter().zip(&want).enumerate() {
                    // The rounding of −g · log₂ e: relative 6e-8 of an
                    // exponent up to 126, for negative gates.
                    let err = (f64::from(o) - w).abs();
                    let rel = 3e-7 + 1e-7 * f64::from(-g[j]).max(0.0);
                    assert!(
                        err <= rel * w.abs() + 1e-37,
                        "{name}: silu({}) · {} = {o}, not {w}",
                        g[j],
                        u[j]
                    );
                }
                assert_eq!(got[3], 0.0, "{name}: silu(0)");
            }
            // Below libm's range: g · u / (1 + 2^126) at most, never NaN.
            let deep = [-90.0f32, -200.0, -1e6];
            let mut out = [1f32; 3];
            super::super::silu_times(&deep, &[2.0; 3], &mut out);
            for (&g, &o) in deep.iter().zip(&out) {
                assert!(
                    o <= 0.0 && o >= g * 2.0 / 2f32.powi(126),
                    "silu({g}) · 2 = {o}"
                );
            }
        }
    }
}
