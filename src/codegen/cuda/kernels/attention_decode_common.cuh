// What both split-KV decode attention kernels share (attention_decode.cuh on CUDA cores,
// attention_decode_mma.cuh on tensor cores): one thread-block cluster of kClusterBlocks blocks
// per (batch, key/value head), whose query rows are the kGroup query heads that share that
// key/value head times the kSq query positions (kRows of them), so K and V are read once for
// all of them. Block `rank` of the cluster takes the rank-th slice of the keys, in stages that
// its warps take in turn: each warp streams its stages through a ring of its own in shared
// memory (cp.async, kStages deep), so a block keeps tens of KiB of loads in flight without the
// registers to hold them, and no warp waits on another before its keys are done. Each warp
// keeps a running max, sum and weighted sum of V per row (online softmax in f32, log2 units)
// and leaves them in its ring; the warps of a block are merged through shared memory, and the
// blocks of the cluster by all of them: each block stores its partials into the shared memory of
// the block that owns those elements of Y (distributed shared memory, sm_90), which merges and
// writes them. No workspace and one launch.
//
// Needs from the emitter: attention_common.cuh and cluster.cuh before it, gf_elem / gf_load /
// gf_store, gf_mask_elem, the constants of attention_common.cuh and kB, kHq, kGroup, kSq, kSkv, kD
// (= kDv), the kQ/kK/kV/kY strides, kScale, kSoftcap, kWarps, kClusterBlocks, kStages and kRows
// (= kGroup * kSq). The entry point carries __cluster_dims__(kClusterBlocks, 1, 1). Not for
// is_causal (the emitter does not choose it then).

constexpr int kDecodeThreads = 32 * (int)kWarps;
constexpr int kDecodeRows = (int)kRows;
constexpr int kElemsPerPiece = 16 / (int)sizeof(gf_elem);  // elements per 16-byte copy
constexpr int kRowPieces = (int)kD / kElemsPerPiece;        // 16-byte pieces per key row
constexpr int64_t kHkv = kHq / (kGroup > 0 ? kGroup : 1);
constexpr float kDecodeLog2e = 1.4426950408889634f;
constexpr float kDecodeSoftcapDivisor = kSoftcap > 0.0f ? kSoftcap : 1.0f;  // used only when > 0
// Keys per cluster block; the last block's slice may be shorter (or empty).
constexpr int64_t kSlice = (kSkv + kClusterBlocks - 1) / kClusterBlocks;
static_assert(kD % kElemsPerPiece == 0, "key rows are whole 16-byte pieces");
static_assert(kStages >= 2, "the pipeline has at least two stages");

static __device__ __forceinline__ void gf_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
static __device__ __forceinline__ void gf_cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
static __device__ __forceinline__ void gf_cp_async_wait_stages() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 1) : "memory");  // the oldest stage is in
}

// Whether K, V and Q can be copied in 16-byte pieces: the pointers and every row's start.
static __device__ __forceinline__ bool gf_decode_aligned(const void* q, const void* k, const void* v) {
  constexpr bool kStridesAligned =
      ((kQStrideB | kQStrideH | kQStrideS | kKStrideB | kKStrideH | kKStrideS | kVStrideB | kVStrideH | kVStrideS) %
       kElemsPerPiece) == 0;
  return kStridesAligned && (((uint64_t)q | (uint64_t)k | (uint64_t)v) & 15) == 0;
}

// Where piece `col` of tile row `row` goes, in pieces from the tile's start. Swizzled: rows that
// share a 128-byte line of shared memory take different permutations of their pieces, so that
// ldmatrix reads the same piece of 8 rows without bank conflicts.
constexpr int kLinePieces = kRowPieces < 8 ? kRowPieces : 8;
constexpr int kSwizzleShift = kRowPieces >= 8 ? 0 : kRowPieces == 4 ? 1 : kRowPieces == 2 ? 2 : 3;
template <bool kSwizzled>
static __device__ __forceinline__ int gf_decode_piece_at(int row, int col) {
  if constexpr (kSwizzled) return row * kRowPieces + (col ^ ((row >> kSwizzleShift) & (kLinePieces - 1)));
  return row * kRowPieces + col;
}

// Keys [j0, j0 + kKeys) of K, then of V, into a warp's stage `slot` (piece places by
// gf_decode_piece_at; zeros from key `end` on, so that a key past the slice adds 0 x 0). With
// `async` each 16-byte piece is one cp.async (the caller commits and waits); otherwise plain
// loads and stores. A whole aligned stage inside the slice (all but a slice's last) takes the
// short way: a lane's pieces sit at fixed distances from its first, so each is one cp.async
// at a constant offset, with no bounds to test.
template <int kKeys, bool kSwizzled>
static __device__ __forceinline__ void gf_decode_fetch(gf_elem* slot, const gf_elem* k_head, const gf_elem* v_head,
                                                       int64_t j0, int64_t end, int lane, bool async) {
  constexpr int kTilePieces = kKeys * kRowPieces;
  constexpr int kPasses = kTilePieces / 32;  // per tile
  static_assert(kTilePieces % 32 == 0, "a stage's pieces are whole passes of a warp");
  static_assert(32 % kRowPieces == 0 || kRowPieces % 32 == 0, "a pass covers whole rows, or rows whole passes");
  if (async && j0 + kKeys <= end) {
    // Pass p's piece is the lane's first (row0, col0) moved by constants: rows_ahead rows and
    // cols_ahead pieces.
    const int row0 = kRowPieces <= 32 ? lane / kRowPieces : 0;
    const int col0 = kRowPieces <= 32 ? lane % kRowPieces : lane;
    const gf_elem* k_from = k_head + (j0 + row0) * kKStrideS + col0 * kElemsPerPiece;
    const gf_elem* v_from = v_head + (j0 + row0) * kVStrideS + col0 * kElemsPerPiece;
    const uint32_t base = gf_smem_addr(slot);
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int rows_ahead = 32 * pass / kRowPieces, cols_ahead = 32 * pass % kRowPieces;
      const uint32_t to = base + 16u * (uint32_t)gf_decode_piece_at<kSwizzled>(row0 + rows_ahead, col0 + cols_ahead);
      const int64_t ahead = cols_ahead * kElemsPerPiece;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(k_from + rows_ahead * kKStrideS + ahead)
                   : "memory");
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to + 16u * kTilePieces),
                   "l"(v_from + rows_ahead * kVStrideS + ahead)
                   : "memory");
    }
    return;
  }
#pragma unroll
  for (int pass = 0; pass < 2 * kPasses; ++pass) {
    const int piece = lane + 32 * pass;
    const bool is_v = piece >= kTilePieces;  // uniform per pass
    const int rest = is_v ? piece - kTilePieces : piece;
    const int row = rest / kRowPieces, col = rest % kRowPieces;
    const int64_t j = j0 + row;
    const gf_elem* from = (is_v ? v_head + j * kVStrideS : k_head + j * kKStrideS) + col * kElemsPerPiece;
    gf_elem* to = slot + ((is_v ? kTilePieces : 0) + gf_decode_piece_at<kSwizzled>(row, col)) * kElemsPerPiece;
    if (async) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(gf_smem_addr(to)),
                   "l"(j < end ? from : k_head), "r"(j < end ? 16 : 0)
                   : "memory");
    } else {
#pragma unroll
      for (int e = 0; e < kElemsPerPiece; ++e) to[e] = j < end ? from[e] : (gf_elem)0;
    }
  }
}

// Streams this warp's stages of block `rank`'s slice of the keys through the warp's ring of
// kStages stages: stage n of the slice (kKeys keys) goes to warp n % kWarps, so the warps read
// neighbouring pieces of K and V; each stage is fetched kStages - 1 stages ahead of the one
// worked on, and handed to work(stage, j0, end) (K rows, then V rows; its first key; the
// slice's end) once every lane's pieces are in. The stage count is uniform per warp, so every
// lane takes part in each stage's shuffles and MMAs.
template <int kKeys, bool kSwizzled, class Work>
static __device__ __forceinline__ void gf_decode_stream(gf_elem* ring, const gf_elem* k_head, const gf_elem* v_head,
                                                        uint32_t rank, int warp, int lane, bool aligned, Work&& work) {
  constexpr int kStageElems = 2 * kKeys * (int)kD;
  const int64_t first = rank * kSlice;
  const int64_t end = first + kSlice < kSkv ? first + kSlice : kSkv;
  const int64_t slice_stages = end > first ? (end - first + kKeys - 1) / kKeys : 0;
  const int64_t my_stages = slice_stages > warp ? (slice_stages - 1 - warp) / kWarps + 1 : 0;
  const auto stage_first = [&](int64_t n) { return first + (n * kWarps + warp) * kKeys; };
#pragma unroll
  for (int n = 0; n < kStages - 1; ++n) {
    if (n < my_stages) {
      gf_decode_fetch<kKeys, kSwizzled>(ring + n * kStageElems, k_head, v_head, stage_first(n), end, lane, aligned);
    }
    gf_cp_async_commit();
  }
  // The ring's slots of stage n and of stage n + kStages - 1, fetched while n is worked on.
  int slot = 0, ahead_slot = kStages - 1;
  for (int64_t n = 0; n < my_stages; ++n) {
    if (n + kStages - 1 < my_stages) {
      gf_decode_fetch<kKeys, kSwizzled>(ring + ahead_slot * kStageElems, k_head, v_head, stage_first(n + kStages - 1),
                                        end, lane, aligned);
    }
    gf_cp_async_commit();
    gf_cp_async_wait_stages();
    __syncwarp();  // every lane's pieces of stage n are in place
    work((const gf_elem*)(ring + slot * kStageElems), stage_first(n), end);
    __syncwarp();  // every lane is done with the stage before a later fetch overwrites it
    slot = slot + 1 == kStages ? 0 : slot + 1;
    ahead_slot = ahead_slot + 1 == kStages ? 0 : ahead_slot + 1;
  }
  gf_cp_async_wait_all();  // the empty groups past the warp's last stage
}

// Merges the warps' results (warp w's at results + w * stride floats: kRows maxima, kRows sums,
// then kRows rows of kD) into this block's, then the cluster's, which the blocks write to Y
// together. Called by every thread of every block of the cluster, after the warps' results are
// written, by threads that called gf_cluster_arrive_relaxed at entry.
//
// Block `rank` owns every kClusterBlocks-th element of Y (those at rank modulo the cluster).
// Each block pushes its merged partials straight into their owners' inboxes (distributed shared
// memory stores) and the maxima and sums of every row into all of them; one cluster barrier
// later each owner merges its elements from its own shared memory and writes them. Pulling the
// partials instead (each owner loading them from every block after a barrier) took a round trip
// more, and a second barrier so that no block left while others still read its shared memory.
constexpr int kDecodeShare =
    (kDecodeRows * (int)kD + (int)kClusterBlocks - 1) / (int)kClusterBlocks;
static __device__ __forceinline__ void gf_decode_combine(const float* results, int64_t stride,
                                                         gf_elem* y, int64_t b, int64_t kv_h,
                                                         uint32_t rank) {
  // Block c's partials for this block's elements: maxima and sums of every row, and the
  // weighted rows' elements this block owns, at element / kClusterBlocks.
  __shared__ float gf_inbox_m[kClusterBlocks][kDecodeRows], gf_inbox_l[kClusterBlocks][kDecodeRows];
  __shared__ float gf_inbox_acc[kClusterBlocks][kDecodeShare];
  __syncthreads();
  gf_cluster_wait();  // every block of the cluster has started: its inbox may be written
  // The warps of this block: one thread per (row, dim), the row's max and sum alongside.
  for (int at = threadIdx.x; at < kDecodeRows * kD; at += kDecodeThreads) {
    const int r = at / kD;
    float mx = gf_neg_inf();
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, results[w * stride + r]);
    float sum = 0.0f, weighted = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float* res = results + w * stride;
      const float f = res[r] == gf_neg_inf() ? 0.0f : exp2f(res[r] - mx);
      sum += res[kDecodeRows + r] * f;
      weighted += res[2 * kDecodeRows + at] * f;
    }
    gf_cluster_store(&gf_inbox_acc[rank][at / kClusterBlocks], (uint32_t)(at % kClusterBlocks),
                     weighted);
    if (at % kD == 0) {
#pragma unroll
      for (uint32_t c = 0; c < kClusterBlocks; ++c) {
        gf_cluster_store(&gf_inbox_m[rank][r], c, mx);
        gf_cluster_store(&gf_inbox_l[rank][r], c, sum);
      }
    }
  }
  gf_cluster_sync();  // every block's partials are in their owners' inboxes
  // This block's elements, the blocks summed in rank order (results are bitwise repeatable).
  for (int at = (int)(threadIdx.x * kClusterBlocks + rank); at < kDecodeRows * kD;
       at += (int)(kDecodeThreads * kClusterBlocks)) {
    const int r = at / kD, d = at % kD, slot = at / (int)kClusterBlocks;
    float mx = gf_neg_inf();
#pragma unroll
    for (uint32_t c = 0; c < kClusterBlocks; ++c) mx = fmaxf(mx, gf_inbox_m[c][r]);
    float sum = 0.0f, weighted = 0.0f;
#pragma unroll
    for (uint32_t c = 0; c < kClusterBlocks; ++c) {
      const float mc = gf_inbox_m[c][r];
      const float f = mc == gf_neg_inf() ? 0.0f : exp2f(mc - mx);
      sum += gf_inbox_l[c][r] * f;
      weighted += gf_inbox_acc[c][slot] * f;
    }
    // No key with a finite bias (or no keys): a zero row, as the reference's sum 0 -> 1.
    const int64_t h = kv_h * kGroup + r / kSq, i = r % kSq;
    y[b * kYStrideB + h * kYStrideH + i * kYStrideS + d] =
        gf_store(weighted / (sum == 0.0f ? 1.0f : sum));
  }
  // No barrier before leaving: after the one above no block touches another's shared memory.
}
