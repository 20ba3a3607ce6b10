//! The f32 vector forms the engine's float kernels run on: AVX-512F
//! ([`Form::Avx512`], 16 lanes) or AVX2 + FMA ([`Form::Avx2`], 8 lanes),
//! the operations behind one trait ([`Lanes`], x86-64 only) so each kernel
//! body is written once, generic over it, and compiled inside one
//! `#[target_feature]` entry per form: prefill attention
//! ([`super::flash_f32`]) and the experts' SiLU ([`super::silu`]).
//!
//! Which form runs is [`form`]: the widest the CPU has that
//! [`super::q8_0::TILE_ISA_ENV`]'s cap allows, so one cap holds the
//! quantized tiles and these kernels to the same width.

#[cfg(target_arch = "x86_64")]
mod vector;
#[cfg(target_arch = "x86_64")]
pub(crate) use vector::{Lanes, Ymm, Zmm};

/// The vector registers an f32 kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// AVX-512F: 16 lanes.
    Avx512,
    /// AVX2 + FMA: 8 lanes.
    Avx2,
}

impl Form {
    /// Every form, widest first.
    pub(crate) const ALL: [Self; 2] = [Self::Avx512, Self::Avx2];

    /// The form's name (as [`super::CpuKernels`] reports it).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Avx512 => "avx512",
            Self::Avx2 => "avx2",
        }
    }

    /// Whether this CPU runs this form.
    pub(crate) fn is_supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Self::Avx512 => has!("avx512f"),
                Self::Avx2 => has!("avx2") && has!("fma"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// The form the f32 kernels run on this CPU: the widest supported one
/// that [`super::q8_0::TILE_ISA_ENV`]'s cap allows (`avx2` or `avxvnni`
/// hold it to 256 bits, `off` leaves the work to candle's ops and scalar
/// loops); `None` where none.
pub(crate) fn form() -> Option<Form> {
    use super::q8_0::{TileIsa, allows};
    let allowed = |form: Form| match form {
        Form::Avx512 => allows(TileIsa::Avx512Vnni),
        Form::Avx2 => allows(TileIsa::Avx2),
    };
    Form::ALL
        .into_iter()
        .find(|&form| allowed(form) && form.is_supported())
}
