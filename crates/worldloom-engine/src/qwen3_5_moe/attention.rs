//! Gated full attention (`self_attn`): `q_proj` yields per head a query and
//! an output gate, zero-centred q/k RMSNorms, rotate-half RoPE on the first
//! `head_dim × partial_rotary_factor` dimensions, GQA, output ×
//! sigmoid(gate).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_core::{D, DType, Tensor};

use super::config::Config;
use super::norm::ZeroCentredRmsNorm;
use crate::kernels::cpu::try_cached_attention;
use crate::weights::{LinearWeight, LoadError, Weights};

/// Gated full attention (`self_attn`).
#[derive(Debug, Clone)]
pub(super) struct FullAttention {
    q_proj: LinearWeight,
    k_proj: LinearWeight,
    v_proj: LinearWeight,
    o_proj: LinearWeight,
    q_norm: ZeroCentredRmsNorm,
    k_norm: ZeroCentredRmsNorm,
    num_heads: usize,
    num_kv_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
}

/// KV cache of one attention layer: K and V buffers [kv_heads, capacity,
/// head_dim] of which the first `len` positions are valid.
///
/// A step writes its new positions in place (no copy of the cache per
/// step); the buffers grow by doubling (one copy per growth). Clones share
/// the buffers: positions are only ever appended, and a cache reads only
/// its first `len`, so a clone taken as a snapshot and the live cache
/// appending after it can keep one buffer. The buffers record how far any
/// sharer has written (`written`); a cache appends in place when it holds
/// the buffers alone or when nobody has written past its `len` (it then
/// claims the new positions), otherwise it copies its `len` positions into
/// buffers of its own (at the same capacity when they fit). A snapshot
/// restored after the live cache moved on is the one that copies; a
/// snapshot and a live cache cost one cache, not two. Positions at or
/// after `len` are never read, so a failed step that wrote there and kept
/// the old `len` leaves the cache as it was.
#[derive(Debug, Clone)]
pub(super) struct KvCache {
    buffers: Arc<KvBuffers>,
    len: usize,
}

#[derive(Debug)]
struct KvBuffers {
    k: Tensor,
    v: Tensor,
    /// Positions `0..written` hold some sharer's entries.
    written: AtomicUsize,
}

/// Capacity granularity of the KV buffers, in positions.
const KV_BLOCK: usize = 256;

impl KvCache {
    /// Valid positions.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Forgets the positions from `len` on (restoring a failed step).
    pub(super) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Bytes the K and V buffers occupy (their capacity).
    pub(super) fn size_bytes(&self) -> usize {
        let bytes = |t: &Tensor| t.elem_count() * t.dtype().size_in_bytes();
        bytes(&self.buffers.k) + bytes(&self.buffers.v)
    }

    /// The K and V buffers [kv_heads, capacity, head_dim].
    fn buffers(&self) -> (&Tensor, &Tensor) {
        (&self.buffers.k, &self.buffers.v)
    }

    fn capacity(&self) -> usize {
        self.buffers.k.dims().get(1).copied().unwrap_or(0)
    }

    /// Whether this cache may write positions `len..needed` in place, and
    /// if so records them as written: the buffers are its alone, or no
    /// sharer has written past `len` (an atomic claim, so two sharers on
    /// two threads never both win).
    fn claim(&mut self, needed: usize) -> bool {
        if self.capacity() < needed {
            return false;
        }
        if let Some(own) = Arc::get_mut(&mut self.buffers) {
            *own.written.get_mut() = needed;
            return true;
        }
        self.buffers
            .written
            .compare_exchange(self.len, needed, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Appends `k`, `v` [kv_heads, T, head_dim] to `cache` (creating it)
    /// and returns views of all valid K and V, [kv_heads, len, head_dim].
    fn append(
        cache: &mut Option<Self>,
        k: &Tensor,
        v: &Tensor,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let (kvh, t, hd) = k.dims3()?;
        let len = cache.as_ref().map_or(0, |c| c.len);
        let needed = len + t;
        if !cache.as_mut().is_some_and(|c| c.claim(needed)) {
            let old_capacity = cache.as_ref().map_or(0, KvCache::capacity);
            let capacity = if old_capacity >= needed {
                old_capacity
            } else {
                needed.max(2 * old_capacity).div_ceil(KV_BLOCK) * KV_BLOCK
            };
            let fresh = |old: Option<&Tensor>| -> candle_core::Result<Tensor> {
                let buf = Tensor::zeros((kvh, capacity, hd), k.dtype(), k.device())?;
                if let Some(old) = old.filter(|_| len > 0) {
                    buf.slice_set(&old.narrow(1, 0, len)?.contiguous()?, 1, 0)?;
                }
                Ok(buf)
            };
            let old = cache.as_ref().map(|c| &c.buffers);
            let buffers = KvBuffers {
                k: fresh(old.map(|b| &b.k))?,
                v: fresh(old.map(|b| &b.v))?,
                written: AtomicUsize::new(needed),
            };
            *cache = Some(KvCache {
                buffers: Arc::new(buffers),
                len,
            });
        }
        let Some(c) = cache.as_mut() else {
            candle_core::bail!("KV cache missing after allocation");
        };
        c.buffers.k.slice_set(&k.contiguous()?, 1, len)?;
        c.buffers.v.slice_set(&v.contiguous()?, 1, len)?;
        c.len = needed;
        Ok((
            c.buffers.k.narrow(1, 0, needed)?,
            c.buffers.v.narrow(1, 0, needed)?,
        ))
    }
}

impl FullAttention {
    /// Reads the layer's `self_attn` under `vb`.
    pub(super) fn load(cfg: &Config, vb: &Weights<'_>) -> Result<Self, LoadError> {
        let (h, nh, kvh, hd) = (
            cfg.hidden_size,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        );
        Ok(Self {
            q_proj: vb.get_linear("q_proj.weight", &[nh * hd * 2, h])?,
            k_proj: vb.get_linear("k_proj.weight", &[kvh * hd, h])?,
            v_proj: vb.get_linear("v_proj.weight", &[kvh * hd, h])?,
            o_proj: vb.get_linear("o_proj.weight", &[h, nh * hd])?,
            q_norm: ZeroCentredRmsNorm::load(vb, "q_norm.weight", hd, cfg.rms_norm_eps)?,
            k_norm: ZeroCentredRmsNorm::load(vb, "k_norm.weight", hd, cfg.rms_norm_eps)?,
            num_heads: nh,
            num_kv_heads: kvh,
            head_dim: hd,
            rotary_dim: cfg.rotary_dim(),
        })
    }

    /// Rotate-half RoPE on the first `rotary_dim` dims of x [heads, T, hd].
    fn rope(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
        let rot = x.narrow(D::Minus1, 0, self.rotary_dim)?.contiguous()?;
        let rot = candle_nn::rotary_emb::rope(&rot.unsqueeze(0)?, cos, sin)?.squeeze(0)?;
        if self.rotary_dim == self.head_dim {
            return Ok(rot);
        }
        let pass = x.narrow(D::Minus1, self.rotary_dim, self.head_dim - self.rotary_dim)?;
        Tensor::cat(&[&rot, &pass], D::Minus1)
    }

    /// x [T, hidden] → [T, hidden]; `cos`/`sin` [T, rotary_dim/2] for the
    /// absolute positions `offset..offset+T`. `fused` runs the q/k norms as
    /// fused ops (same maths).
    pub(super) fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        offset: usize,
        cache: &mut Option<KvCache>,
        fused: bool,
    ) -> candle_core::Result<Tensor> {
        let t = x.dim(0)?;
        let (nh, kvh, hd) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let q_gate = self.q_proj.forward(x)?.reshape((t, nh, 2 * hd))?;
        let q = q_gate.narrow(2, 0, hd)?;
        let gate = q_gate.narrow(2, hd, hd)?.reshape((t, nh * hd))?;
        let q = self
            .q_norm
            .forward_with(&q.contiguous()?, fused)?
            .transpose(0, 1)?;
        let k = self.k_proj.forward(x)?.reshape((t, kvh, hd))?;
        let k = self.k_norm.forward_with(&k, fused)?.transpose(0, 1)?;
        let v = self
            .v_proj
            .forward(x)?
            .reshape((t, kvh, hd))?
            .transpose(0, 1)?
            .contiguous()?;
        let q = self.rope(&q, cos, sin)?;
        let k = self.rope(&k, cos, sin)?;
        let (k, v) = KvCache::append(cache, &k, &v)?;
        let s = k.dim(1)?;
        let scale = 1.0 / (hd as f64).sqrt();
        if let Some(c) = cache.as_ref() {
            // On the CPU, decode, short forwards (a verifying forward of
            // speculative decoding) and prompt pieces over an f32 cache:
            // read the cache in place, f32 sums (`try_cached_attention`
            // declines what it does not take).
            let (k_buf, v_buf) = c.buffers();
            let q_rows = q.transpose(0, 1)?; // [t, heads, hd]
            if let Some(out) = try_cached_attention(&q_rows, k_buf, v_buf, s, scale as f32)? {
                let gated = (out * candle_nn::ops::sigmoid(&gate)?)?;
                return self.o_proj.forward(&gated);
            }
        }
        let out = attend(&q, &k, &v, offset, scale, query_block(t, nh, s))?;
        let gated = (out * candle_nn::ops::sigmoid(&gate)?)?;
        self.o_proj.forward(&gated)
    }
}

/// Causal scaled-dot-product attention of `t` new queries over the cache.
///
/// `q` [heads, t, head_dim] for the absolute positions `offset..offset+t`;
/// `k`, `v` [kv_heads, keys, head_dim] (keys = offset + t; heads a multiple
/// of kv_heads, query head h reading KV head h / (heads / kv_heads)).
/// Scores in the inputs' dtype then f32 for the mask and softmax, the
/// probabilities back in the inputs' dtype against `v`. Queries go in blocks
/// of `block`. Returns [t, heads · head_dim].
fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    offset: usize,
    scale: f64,
    block: usize,
) -> candle_core::Result<Tensor> {
    let (nh, t, hd) = q.dims3()?;
    let kvh = k.dim(0)?;
    let groups = nh / kvh;
    let dtype = q.dtype();
    // GQA without repeating K/V: query head h reads KV head h / groups
    // (consecutive groups), so the queries of one KV head are the rows
    // of q [kv_heads, groups·n, hd] (group-major) and one batched matmul
    // per KV head reads the cache in place. Queries go in blocks so the
    // scores [heads, block, keys] stay within SCORES_BUDGET_BYTES however
    // long the context; a block reads only the keys its last query sees.
    let q = q.contiguous()?.reshape((kvh, groups, t, hd))?;
    let mut outs = Vec::with_capacity(t.div_ceil(block));
    for start in (0..t).step_by(block) {
        let n = block.min(t - start);
        let keys = offset + start + n;
        let q = q
            .narrow(2, start, n)?
            .contiguous()?
            .reshape((kvh, groups * n, hd))?;
        let k = k.narrow(1, 0, keys)?;
        let v = v.narrow(1, 0, keys)?;
        // At most two score-sized tensors live at once: each step takes the
        // previous one by value.
        let scores = (q.matmul(&k.t()?)? * scale)?.to_dtype(DType::F32)?;
        let scores = if n > 1 {
            causal_mask(scores, (kvh, groups, n), offset + start)?
        } else {
            scores
        };
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        drop(scores);
        let probs = probs.to_dtype(dtype)?;
        outs.push(
            probs
                .matmul(&v)?
                .reshape((nh, n, hd))?
                .transpose(0, 1)?
                .reshape((n, nh * hd))?,
        );
    }
    if outs.len() == 1 {
        Ok(outs.swap_remove(0))
    } else {
        Tensor::cat(&outs, 0)
    }
}

/// `scores` [kv_heads, groups·n, keys] (f32) with −∞ where query `i` of
/// the block (absolute position `first + i`) would see a later key: query
/// `i` sees keys `0..=first + i`. Consumes `scores`, so the unmasked copy
/// is freed as soon as the masked one exists.
fn causal_mask(
    scores: Tensor,
    (kvh, groups, n): (usize, usize, usize),
    first: usize,
) -> candle_core::Result<Tensor> {
    let keys = scores.dim(2)?;
    let mask: Vec<f32> = (0..n)
        .flat_map(|i| {
            (0..keys).map(move |j| {
                if j <= first + i {
                    0.0
                } else {
                    f32::NEG_INFINITY
                }
            })
        })
        .collect();
    let mask = Tensor::from_vec(mask, (1, 1, n, keys), scores.device())?;
    scores
        .reshape((kvh, groups, n, keys))?
        .broadcast_add(&mask)?
        .reshape((kvh, groups * n, keys))
}

/// Bytes of f32 attention scores one query block may hold (`[heads, block,
/// keys]`): the prefill of a long context goes in query blocks so its peak
/// memory does not grow with `chunk × context`.
const SCORES_BUDGET_BYTES: usize = 32 << 20;

/// Queries per block for `t` queries of `heads` heads over `keys` keys: as
/// many as fit SCORES_BUDGET_BYTES, at least 1, at most `t`.
fn query_block(t: usize, heads: usize, keys: usize) -> usize {
    let per_query = heads.max(1) * keys.max(1) * std::mem::size_of::<f32>();
    (SCORES_BUDGET_BYTES / per_query).clamp(1, t.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn kv(value: f32, t: usize) -> candle_core::Result<Tensor> {
        Tensor::full(value, (2, t, 3), &Device::Cpu)
    }

    fn values(t: &Tensor) -> candle_core::Result<Vec<f32>> {
        t.narrow(2, 0, 1)?.flatten_all()?.to_vec1()
    }

    /// Appends write in place while the buffers are unshared, grow past
    /// their capacity keeping the old positions, and a clone is a snapshot:
    /// writes on either copy after the clone do not reach the other. The
    /// first to append after the clone keeps the shared buffers; the other,
    /// finding positions past its length written, copies its own at the
    /// same capacity.
    #[test]
    fn kv_cache_appends_in_place_and_clones_are_snapshots() -> candle_core::Result<()> {
        let mut cache = None;
        let (k, v) = KvCache::append(&mut cache, &kv(1.0, 2)?, &kv(-1.0, 2)?)?;
        assert_eq!(k.dims(), &[2, 2, 3]);
        assert_eq!(values(&v)?, vec![-1.0; 4]);
        let first = cache.clone().expect("cache");
        assert_eq!(first.capacity(), KV_BLOCK);
        let shared = Arc::as_ptr(&first.buffers);
        // `first` shares the buffers and wrote nothing past 2: in place.
        let (k, _) = KvCache::append(&mut cache, &kv(2.0, 1)?, &kv(-2.0, 1)?)?;
        assert_eq!(values(&k)?, vec![1.0, 1.0, 2.0, 1.0, 1.0, 2.0]);
        assert_eq!(Arc::as_ptr(&cache.as_ref().expect("cache").buffers), shared);
        let (k, _) = KvCache::append(&mut cache, &kv(4.0, 1)?, &kv(-4.0, 1)?)?;
        assert_eq!(values(&k.narrow(0, 0, 1)?)?, vec![1.0, 1.0, 2.0, 4.0]);
        // The snapshot still reads its two positions.
        let (k_first, _) = first.buffers();
        assert_eq!(values(&k_first.narrow(1, 0, first.len())?)?, vec![1.0; 4]);
        // Position 2 was written by the live cache: the snapshot copies.
        let mut snapshot = Some(first);
        let (k, _) = KvCache::append(&mut snapshot, &kv(3.0, 1)?, &kv(-3.0, 1)?)?;
        assert_eq!(values(&k)?, vec![1.0, 1.0, 3.0, 1.0, 1.0, 3.0]);
        let s = snapshot.as_ref().expect("snapshot");
        assert_ne!(Arc::as_ptr(&s.buffers), shared);
        assert_eq!(s.capacity(), KV_BLOCK);
        // Unshared now: in place, then growth past the capacity.
        let c = cache.as_ref().expect("cache");
        let before = Arc::as_ptr(&c.buffers);
        KvCache::append(&mut cache, &kv(4.0, 1)?, &kv(-4.0, 1)?)?;
        let c = cache.as_ref().expect("cache");
        assert_eq!(Arc::as_ptr(&c.buffers), before);
        let (k, v) = KvCache::append(&mut cache, &kv(5.0, KV_BLOCK)?, &kv(-5.0, KV_BLOCK)?)?;
        let c = cache.as_ref().expect("cache");
        assert_eq!(c.len(), 5 + KV_BLOCK);
        assert_eq!(c.capacity(), 2 * KV_BLOCK);
        let head0: Vec<f32> = values(&k.narrow(0, 0, 1)?)?;
        assert_eq!(&head0[..6], &[1.0, 1.0, 2.0, 4.0, 4.0, 5.0]);
        assert_eq!(values(&v.narrow(1, 0, 4)?)?[..4], [-1.0, -1.0, -2.0, -4.0]);
        // Truncation forgets the tail; the next append overwrites it.
        let mut cache = cache;
        cache.as_mut().expect("cache").truncate(3);
        let (k, _) = KvCache::append(&mut cache, &kv(6.0, 1)?, &kv(-6.0, 1)?)?;
        assert_eq!(values(&k.narrow(0, 0, 1)?)?, vec![1.0, 1.0, 2.0, 6.0]);
        // A clone, then the live cache cut back below it: writing there
        // would change what the clone reads, so the live cache copies.
        let kept = cache.clone().expect("cache");
        cache.as_mut().expect("cache").truncate(2);
        KvCache::append(&mut cache, &kv(7.0, 1)?, &kv(-7.0, 1)?)?;
        let (k_kept, _) = kept.buffers();
        assert_eq!(
            values(&k_kept.narrow(0, 0, 1)?.narrow(1, 0, kept.len())?)?,
            vec![1.0, 1.0, 2.0, 6.0]
        );
        Ok(())
    }
    /// Attention in query blocks of any size equals the causal softmax
    /// attention written out element by element (GQA: 4 query heads on 2 KV
    /// heads; 5 positions already in the cache).
    #[test]
    fn attention_in_query_blocks_equals_the_causal_reference() -> candle_core::Result<()> {
        let (nh, kvh, hd, t, offset) = (4, 2, 8, 7, 5);
        let s = offset + t;
        let dev = Device::Cpu;
        let q = Tensor::randn(0f32, 1.0, (nh, t, hd), &dev)?;
        let k = Tensor::randn(0f32, 1.0, (kvh, s, hd), &dev)?;
        let v = Tensor::randn(0f32, 1.0, (kvh, s, hd), &dev)?;
        let scale = 1.0 / (hd as f64).sqrt();
        let (qs, ks, vs) = (
            q.to_vec3::<f32>()?,
            k.to_vec3::<f32>()?,
            v.to_vec3::<f32>()?,
        );
        let mut reference = vec![0f32; t * nh * hd];
        for h in 0..nh {
            let kv = h / (nh / kvh);
            for i in 0..t {
                let seen = offset + i + 1;
                let logits: Vec<f32> = (0..seen)
                    .map(|j| {
                        let dot: f32 = (0..hd).map(|d| qs[h][i][d] * ks[kv][j][d]).sum();
                        dot * scale as f32
                    })
                    .collect();
                let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                let e: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
                let z: f32 = e.iter().sum();
                for d in 0..hd {
                    let o: f32 = (0..seen).map(|j| e[j] / z * vs[kv][j][d]).sum();
                    reference[i * nh * hd + h * hd + d] = o;
                }
            }
        }
        for block in [1, 2, 3, t] {
            let out = attend(&q, &k, &v, offset, scale, block)?;
            assert_eq!(out.dims(), &[t, nh * hd]);
            let got = out.flatten_all()?.to_vec1::<f32>()?;
            for (i, (a, b)) in got.iter().zip(&reference).enumerate() {
                assert!(
                    (a - b).abs() < 1e-5,
                    "block {block}, element {i}: {a} vs {b}"
                );
            }
        }
        Ok(())
    }

    /// Blocks hold SCORES_BUDGET_BYTES of f32 scores: 16 heads over 4,096
    /// keys fit 128 queries (256 KiB a query), over 512 keys a whole 512-token piece, a short
    /// context the whole chunk, and a context too long for one query still
    /// makes progress.
    #[test]
    fn query_blocks_follow_the_scores_budget() {
        assert_eq!(query_block(512, 16, 4096), 128);
        assert_eq!(query_block(512, 16, 512), 512);
        assert_eq!(query_block(17, 16, 100), 17);
        assert_eq!(query_block(512, 16, 1 << 20), 1);
    }
}
