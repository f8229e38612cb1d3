// Batched small-matrix kernels for jaxmb's vmapped paths (XLA FFI, CPU, float64).
//
// Under vmap, jaxmb factorizes a batch of small constraint matrices at every right-hand side.
// XLA:CPU runs a vectorized jnp Householder loop as dozens of kernels per column, and LAPACK
// must not receive a batch (jaxlib's batched LAPACK calls can hang, see _linalg.py). These
// kernels loop over the batch themselves on the calling thread (the QR kernels kLanes members
// at a time, interleaved so that each step is a vector instruction over the members; the
// others one matrix at a time): no thread pool, no blocking, one XLA custom call per batched
// factorization.
//
//   jaxmb_pivoted_qr_f64:   A[:, perm] = Q R, column-pivoted Householder QR (Golub & Van Loan,
//                           Matrix Computations, 4th ed., alg. 5.4.1), LAPACK geqp3's
//                           conventions: pivot = remaining column of largest norm (first on
//                           ties), R_jj = -sign(x_j) ||x||, H_j = I when x is zero below the
//                           diagonal. The same algorithm as _linalg.householder_pivoted_qr.
//                           Without pivoting (attribute), geqrf's A = Q R.
//   jaxmb_left_null_f64:    the same factorization, but only the columns of Q past the rank
//                           (|R_jj| > rtol max |R_jj|) are formed, the others are zero: a basis
//                           of the left null space of A, with the pivots |R_jj|.
//   jaxmb_svd_f64:          thin SVD A = U diag(s) Vt, s non-increasing, by one-sided Jacobi
//                           (Hestenes; Demmel & Veselic, SIAM J. Matrix Anal. Appl. 13, 1992).
//   jaxmb_set_norms_f64:    |B_X|_F = |C_X^T Q~_X|_F for sets X of rows of C (seed 001, eq. 27),
//                           visiting only the nonzero columns of Q~ (the left null space).
//   jaxmb_triangular_solve_f64: x with T x = b, T triangular (back or forward substitution).
//   jaxmb_spd_inverse_f64:  A^-1 = L^-T L^-1 of a symmetric positive-definite A = L L^T
//                           (Cholesky-Banachiewicz, then the inverse of L by forward
//                           substitution): nan where A is not positive definite.
//   jaxmb_gauss_projection_f64: the null-space formulation's accelerations (seed 001, eq. 13)
//                           from one pivoted QR of the mass-scaled C^T, as
//                           _dynamics.null_space_solve does it (see there).
//
// Every leading dimension is a batch dimension. Buffers are row-major (XLA's default layout).
// Each kernel takes the batch and the sizes from one argument and checks every other buffer
// against them (`shaped`): a call whose buffers disagree fails with INVALID_ARGUMENT before any
// buffer is touched, where it would read or write past one.
// A member with a nan or inf input gets nan outputs (pivoted QR alone would push a nan column
// to the end and leave the others finite: a silently wrong answer).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// Sums over a column may be reassociated and vectorized (-fopenmp-simd; no OpenMP runtime):
// the short loops of a small factorization are otherwise bound by the latency of one chain
// of additions. Round-off changes at the 1e-16 level, as between any two BLAS builds.
#define JAXMB_SIMD_SUM _Pragma("omp simd reduction(+ : s)")

namespace {

// Members factorized together by the interleaved kernels (see householder_qr_lanes).
constexpr int64_t kLanes = 8;
#define JAXMB_LANES _Pragma("omp simd")

// x <- H x = x - tau v (v^T x) on the rows j..m-1 (v is zero above row j): a reflector applied
// to one column.
void reflect(const double* v, double tau, double* x, int64_t j, int64_t m) {
  double s = 0.0;
  JAXMB_SIMD_SUM
  for (int64_t i = j; i < m; ++i) s += v[i] * x[i];
  s *= tau;
  for (int64_t i = j; i < m; ++i) x[i] -= s * v[i];
}

// x <- H x on interleaved lanes: x_l -= tau_l v_l (v_l^T x_l) on the rows j..m-1.
inline void reflect_lanes(const double* v, const double* tau, double* x, int64_t j, int64_t m) {
  constexpr int64_t L = kLanes;
  double s[L] = {0.0};
  for (int64_t i = j; i < m; ++i) {
    JAXMB_LANES
    for (int64_t l = 0; l < L; ++l) s[l] += v[i * L + l] * x[i * L + l];
  }
  JAXMB_LANES
  for (int64_t l = 0; l < L; ++l) s[l] *= tau[l];
  for (int64_t i = j; i < m; ++i) {
    JAXMB_LANES  // a lane with tau = 0 has v = 0 (householder_qr_lanes): x is left as it is
    for (int64_t l = 0; l < L; ++l) x[i * L + l] -= s[l] * v[i * L + l];
  }
}

// Householder QR with column pivoting of W (m x n, column-major, overwritten by R; the
// columns are swapped as they are pivoted, piv tracks their original indices). Reflector j is
// H_j = I - tau[j] v v^T with v = V[j * m + (j..m-1)] (zero above row j); Q = H_0 ... H_(k-1).
void householder_qr(double* W, int64_t m, int64_t n, int32_t* piv, double* V, double* tau) {
  for (int64_t c = 0; c < n; ++c) piv[c] = static_cast<int32_t>(c);
  const int64_t k = m < n ? m : n;
  for (int64_t j = 0; j < k; ++j) {
    // pivot: the remaining column of largest norm over rows j.., the first in order on ties
    int64_t p = j;
    double best = -1.0;
    for (int64_t c = j; c < n; ++c) {
      const double* col = W + c * m;
      double s = 0.0;
      JAXMB_SIMD_SUM
      for (int64_t i = j; i < m; ++i) s += col[i] * col[i];
      if (s > best) {
        best = s;
        p = c;
      }
    }
    if (p != j) {
      double* a = W + j * m;
      double* b = W + p * m;
      for (int64_t i = 0; i < m; ++i) {
        const double t = a[i];
        a[i] = b[i];
        b[i] = t;
      }
      const int32_t t = piv[j];
      piv[j] = piv[p];
      piv[p] = t;
    }
    // reflector H_j = I - tau v v^T with v = x - beta e_j, beta = -sign(x_j) ||x||
    double* x = W + j * m;
    double* v = V + j * m;
    const double alpha = x[j];
    double tail = 0.0;
    for (int64_t i = j + 1; i < m; ++i) tail += x[i] * x[i];
    if (!(tail > 0.0)) {  // already zero below the diagonal: H_j = I
      tau[j] = 0.0;
      continue;
    }
    const double beta = -(alpha >= 0.0 ? 1.0 : -1.0) * std::sqrt(alpha * alpha + tail);
    double vv = 0.0;
    for (int64_t i = j; i < m; ++i) {
      v[i] = (i == j) ? alpha - beta : x[i];
      vv += v[i] * v[i];
    }
    const double t = 2.0 / vv;
    tau[j] = t;
    // R <- H_j R on the columns j.. (the earlier ones are zero below row j)
    x[j] = beta;
    for (int64_t i = j + 1; i < m; ++i) x[i] = 0.0;  // exact zeros
    for (int64_t c = j + 1; c < n; ++c) reflect(v, t, W + c * m, j, m);
  }
}

// ---------------------------------------------------------------------------------------------
// Interleaved factorization of kLanes members at once. Entry (row i, column c) of lane l sits
// at [(c m + i) kLanes + l]: every step of the algorithm is the same arithmetic for every lane,
// so the innermost loop over the lanes is a vector instruction (and kLanes independent chains
// of additions), where one member alone is a short loop bound by the latency of its sums. Only
// the pivot differs between lanes; its column swap is done lane by lane.

// The algorithm of householder_qr on kLanes interleaved m x n matrices W (overwritten by R);
// piv (n kLanes), V (min(m, n) m kLanes), tau (min(m, n) kLanes) interleaved the same way.
// A lane whose column is already zero below the diagonal gets tau = 0 (H_j = I).
void householder_qr_lanes(double* W, int64_t m, int64_t n, int32_t* piv, double* V,
                          double* tau, bool pivoting) {
  constexpr int64_t L = kLanes;
  for (int64_t c = 0; c < n; ++c)
    for (int64_t l = 0; l < L; ++l) piv[c * L + l] = static_cast<int32_t>(c);
  const int64_t k = m < n ? m : n;
  for (int64_t j = 0; j < k; ++j) {
    if (pivoting) {  // per lane: the remaining column of largest norm, the first on ties
      double best[L];
      int64_t p[L];
      for (int64_t l = 0; l < L; ++l) best[l] = -1.0, p[l] = j;
      for (int64_t c = j; c < n; ++c) {
        const double* col = W + c * m * L;
        double s[L] = {0.0};
        for (int64_t i = j; i < m; ++i) {
          JAXMB_LANES
          for (int64_t l = 0; l < L; ++l) s[l] += col[i * L + l] * col[i * L + l];
        }
        for (int64_t l = 0; l < L; ++l)
          if (s[l] > best[l]) best[l] = s[l], p[l] = c;
      }
      for (int64_t l = 0; l < L; ++l) {
        if (p[l] == j) continue;
        double* a = W + j * m * L + l;
        double* b = W + p[l] * m * L + l;
        for (int64_t i = 0; i < m; ++i) {
          const double t = a[i * L];
          a[i * L] = b[i * L];
          b[i * L] = t;
        }
        const int32_t t = piv[j * L + l];
        piv[j * L + l] = piv[p[l] * L + l];
        piv[p[l] * L + l] = t;
      }
    }
    // reflectors H_j = I - tau v v^T, v = x - beta e_j, beta = -sign(x_j) ||x||
    double* x = W + j * m * L;
    double* v = V + j * m * L;
    double tail[L] = {0.0}, t[L];
    for (int64_t i = j + 1; i < m; ++i) {
      JAXMB_LANES
      for (int64_t l = 0; l < L; ++l) tail[l] += x[i * L + l] * x[i * L + l];
    }
    JAXMB_LANES
    for (int64_t l = 0; l < L; ++l) {
      const double alpha = x[j * L + l];
      const bool reflect = tail[l] > 0.0;
      const double beta = -(alpha >= 0.0 ? 1.0 : -1.0) * std::sqrt(alpha * alpha + tail[l]);
      const double head = alpha - beta;
      t[l] = reflect ? 2.0 / (head * head + tail[l]) : 0.0;
      tau[j * L + l] = t[l];
      v[j * L + l] = reflect ? head : 0.0;  // H = I: v = 0, so applying it changes nothing
      x[j * L + l] = reflect ? beta : alpha;
    }
    for (int64_t i = j + 1; i < m; ++i) {
      JAXMB_LANES
      for (int64_t l = 0; l < L; ++l) {
        v[i * L + l] = tail[l] > 0.0 ? x[i * L + l] : 0.0;
        x[i * L + l] = tail[l] > 0.0 ? 0.0 : x[i * L + l];  // exact zeros
      }
    }
    // R <- H_j R on the columns j + 1.. (a lane with t = 0 is left as it is)
    for (int64_t c = j + 1; c < n; ++c) reflect_lanes(v, t, W + c * m * L, j, m);
  }
}

// Q's columns c >= first[lane] from the reflectors of householder_qr_lanes, backwards as
// orgqr: Q = H_0 (H_1 (... H_(k-1) I)); the columns before first[lane] are zero.
void form_q_lanes(const double* V, const double* tau, int64_t m, int64_t k, int64_t kq,
                  const int64_t* first, double* Qc) {
  constexpr int64_t L = kLanes;
  int64_t lowest = kq;
  for (int64_t l = 0; l < L; ++l) lowest = first[l] < lowest ? first[l] : lowest;
  for (int64_t c = 0; c < kq; ++c)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < L; ++l) Qc[(c * m + i) * L + l] = (i == c) ? 1.0 : 0.0;
  for (int64_t j = k - 1; j >= 0; --j)
    for (int64_t c = j > lowest ? j : lowest; c < kq; ++c)
      reflect_lanes(V + j * m * L, tau + j * L, Qc + c * m * L, j, m);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t c = 0; c < first[l] && c < kq; ++c)
      for (int64_t i = 0; i < m; ++i) Qc[(c * m + i) * L + l] = 0.0;
}

bool all_finite(const double* x, int64_t count) {
  double s = 0.0;
  JAXMB_SIMD_SUM  // in any order: one chain of additions cost 0.7 us for the robot's C
  for (int64_t i = 0; i < count; ++i) s += x[i] * 0.0;  // nan for any nan or inf entry
  return s == 0.0;
}

void fill_nan(double* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] = std::nan("");
}

int64_t batch_of(ffi::AnyBuffer::Dimensions dims, int64_t core) {
  int64_t b = 1;
  for (int64_t d = 0; d + core < static_cast<int64_t>(dims.size()); ++d) b *= dims[d];
  return b;
}

// Whether `dims` is the leading (batch) dimensions of `ref` (all but its last `ref_core`)
// followed by `core`. Each kernel takes its batch and sizes from one argument and indexes every
// other buffer with them, so a buffer of any other shape would be read or written past its end
// (jaxmb's wrappers always agree; a direct jax.ffi.ffi_call need not).
bool shaped(ffi::AnyBuffer::Dimensions dims, ffi::AnyBuffer::Dimensions ref, size_t ref_core,
            std::initializer_list<int64_t> core) {
  if (ref.size() < ref_core) return false;
  const size_t lead = ref.size() - ref_core;
  if (dims.size() != lead + core.size()) return false;
  for (size_t d = 0; d < lead; ++d)
    if (dims[d] != ref[d]) return false;
  size_t d = lead;
  for (const int64_t c : core)
    if (dims[d++] != c) return false;
  return true;
}

// Workspace of the interleaved factorization: `run` factorizes up to kLanes consecutive m x n
// row-major members (missing lanes factorize zeros) and forms Q's columns c >= first[lane]:
// all of them, or with null_rtol >= 0 those past the rank (|R_jj| > null_rtol max |R_jj|).
struct LaneQr {
  int64_t m, n, k, kq;
  std::vector<double> W, Qc, V, tau;
  std::vector<int32_t> piv;
  int64_t first[kLanes];

  LaneQr(int64_t m_, int64_t n_, int64_t kq_)
      : m(m_), n(n_), k(m_ < n_ ? m_ : n_), kq(kq_), W(m_ * n_ * kLanes),
        Qc(m_ * kq_ * kLanes), V(m_ * (m_ < n_ ? m_ : n_) * kLanes),
        tau((m_ < n_ ? m_ : n_) * kLanes), piv(n_ * kLanes) {}

  void run(const double* A, int64_t lanes, bool pivoting, double null_rtol) {
    constexpr int64_t L = kLanes;
    for (int64_t l = 0; l < L; ++l)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t c = 0; c < n; ++c)
          W[(c * m + i) * L + l] = l < lanes ? A[l * m * n + i * n + c] : 0.0;
    householder_qr_lanes(W.data(), m, n, piv.data(), V.data(), tau.data(), pivoting);
    for (int64_t l = 0; l < L; ++l) {
      first[l] = 0;
      if (null_rtol < 0.0) continue;
      double dmax = 0.0;
      for (int64_t j = 0; j < k; ++j) dmax = std::fmax(dmax, std::fabs(r(j, j, l)));
      while (first[l] < k && std::fabs(r(first[l], first[l], l)) > null_rtol * dmax) ++first[l];
    }
    form_q_lanes(V.data(), tau.data(), m, k, kq, first, Qc.data());
  }

  // Every member of `batch` consecutive m x n matrices at A through `run`, kLanes at a time;
  // write(b, l, finite) then reads member b from lane l (finite: A_b has no nan or inf).
  template <class Write>
  void each(const double* A, int64_t batch, bool pivoting, double null_rtol, Write write) {
    for (int64_t b0 = 0; b0 < batch; b0 += kLanes) {
      const int64_t lanes = batch - b0 < kLanes ? batch - b0 : kLanes;
      run(A + b0 * m * n, lanes, pivoting, null_rtol);
      for (int64_t l = 0; l < lanes; ++l)
        write(b0 + l, l, all_finite(A + (b0 + l) * m * n, m * n));
    }
  }

  double r(int64_t i, int64_t c, int64_t l) const { return W[(c * m + i) * kLanes + l]; }
  double q(int64_t i, int64_t c, int64_t l) const { return Qc[(c * m + i) * kLanes + l]; }
};

ffi::Error PivotedQr(ffi::Buffer<ffi::F64> a, ffi::ResultBuffer<ffi::F64> q,
                     ffi::ResultBuffer<ffi::F64> r, ffi::ResultBuffer<ffi::S32> perm,
                     bool pivoting) {
  auto dims = a.dimensions();
  if (dims.size() < 2) return ffi::Error::InvalidArgument("pivoted_qr: A must be a matrix");
  const int64_t m = dims[dims.size() - 2], n = dims[dims.size() - 1];
  auto qd = q->dimensions(), rd = r->dimensions();
  if (qd.size() != dims.size() || rd.size() != dims.size())
    return ffi::Error::InvalidArgument("pivoted_qr: Q and R must have A's rank");
  const int64_t kq = qd[qd.size() - 1], kr = rd[rd.size() - 2];
  if (!(kq == m || kq == (m < n ? m : n)) || !shaped(qd, dims, 2, {m, kq}) ||
      !shaped(rd, dims, 2, {kq, n}) || !shaped(perm->dimensions(), dims, 2, {n}))
    return ffi::Error::InvalidArgument(
        "pivoted_qr: results must be Q (..., m, k), R (..., k, n), perm (..., n) for A (..., m, "
        "n), k = m or min(m, n)");
  const int64_t batch = batch_of(dims, 2);
  LaneQr f(m, n, kq);
  f.each(a.typed_data(), batch, pivoting, -1.0, [&](int64_t b, int64_t l, bool finite) {
    double* Q = q->typed_data() + b * m * kq;
    double* R = r->typed_data() + b * kr * n;
    int32_t* P = perm->typed_data() + b * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < kq; ++c) Q[i * kq + c] = f.q(i, c, l);
    for (int64_t i = 0; i < kr; ++i)
      for (int64_t c = 0; c < n; ++c) R[i * n + c] = (i <= c) ? f.r(i, c, l) : 0.0;
    for (int64_t c = 0; c < n; ++c) P[c] = f.piv[c * kLanes + l];
    if (!finite) {  // nan in, nan out (as LAPACK)
      fill_nan(Q, m * kq);
      fill_nan(R, kr * n);
    }
  });
  return ffi::Error::Success();
}

// The left null space of A (m x n) from its pivoted QR (seed 001, eq. 27): Q~ (m x m) with the
// columns up to the rank (pivots above rtol times the largest) zero, and the pivots |R_jj|
// padded with zeros to m. R itself is not written: solvability needs only its diagonal.
ffi::Error LeftNull(ffi::Buffer<ffi::F64> a, ffi::ResultBuffer<ffi::F64> qt,
                    ffi::ResultBuffer<ffi::F64> pivots, double rtol) {
  auto dims = a.dimensions();
  if (dims.size() < 2) return ffi::Error::InvalidArgument("left_null: A must be a matrix");
  const int64_t m = dims[dims.size() - 2], n = dims[dims.size() - 1];
  if (!shaped(qt->dimensions(), dims, 2, {m, m}) || !shaped(pivots->dimensions(), dims, 2, {m}))
    return ffi::Error::InvalidArgument(
        "left_null: results must be Q~ (..., m, m), pivots (..., m) for A (..., m, n)");
  const int64_t batch = batch_of(dims, 2);
  const int64_t k = m < n ? m : n;
  LaneQr f(m, n, m);
  f.each(a.typed_data(), batch, true, rtol, [&](int64_t b, int64_t l, bool finite) {
    double* Q = qt->typed_data() + b * m * m;
    double* d = pivots->typed_data() + b * m;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < m; ++c) Q[i * m + c] = f.q(i, c, l);
    for (int64_t j = 0; j < m; ++j) d[j] = j < k ? std::fabs(f.r(j, j, l)) : 0.0;
    if (!finite) {  // nan in, nan out (as LAPACK)
      fill_nan(Q, m * m);
      fill_nan(d, m);
    }
  });
  return ffi::Error::Success();
}

// T x = b, T (k, k) triangular, b (k, c); lower: forward substitution, else back substitution.
ffi::Error TriangularSolve(ffi::Buffer<ffi::F64> t, ffi::Buffer<ffi::F64> b,
                           ffi::ResultBuffer<ffi::F64> x, bool lower) {
  auto td = t.dimensions(), bd = b.dimensions();
  if (td.size() < 2 || bd.size() != td.size())
    return ffi::Error::InvalidArgument(
        "triangular_solve: T (..., k, k) and b (..., k, c) must be matrices of the same rank");
  const int64_t k = td[td.size() - 1];
  const int64_t c = bd[bd.size() - 1];
  if (!shaped(td, td, 2, {k, k}) || !shaped(bd, td, 2, {k, c}) ||
      !shaped(x->dimensions(), td, 2, {k, c}))
    return ffi::Error::InvalidArgument(
        "triangular_solve: T must be (..., k, k), b and x (..., k, c), with the same batch");
  const int64_t batch = batch_of(td, 2);
  const double* T = t.typed_data();
  const double* B = b.typed_data();
  double* X = x->typed_data();
  for (int64_t s = 0; s < batch; ++s) {
    const double* Ts = T + s * k * k;
    const double* Bs = B + s * k * c;
    double* Xs = X + s * k * c;
    for (int64_t step = 0; step < k; ++step) {
      const int64_t i = lower ? step : k - 1 - step;
      for (int64_t col = 0; col < c; ++col) {
        double acc = Bs[i * c + col];
        if (lower)
          for (int64_t j = 0; j < i; ++j) acc -= Ts[i * k + j] * Xs[j * c + col];
        else
          for (int64_t j = i + 1; j < k; ++j) acc -= Ts[i * k + j] * Xs[j * c + col];
        Xs[i * c + col] = acc / Ts[i * k + i];
      }
    }
  }
  return ffi::Error::Success();
}

// A^-1 of symmetric positive-definite A (n, n) by its Cholesky factor: L_jj = sqrt(A_jj -
// sum_{k<j} L_jk^2), L_ij = (A_ij - sum_{k<j} L_ik L_jk) / L_jj (i > j; Golub & Van Loan,
// alg. 4.2.1), then X = L^-1 by forward substitution and A^-1 = X^T X. kLanes members at a
// time, interleaved (element (i, j) of lane l at (i n + j) kLanes + l), so that every step is a
// vector instruction over the members and the divisions are the n reciprocals 1 / L_jj per
// member (one chain of dependent divisions per member cost 0.38 us of a 9 x 9 inverse: D16).
// A pivot that is not positive (A not positive definite) or a non-finite input makes the
// member's result nan.
ffi::Error SpdInverse(ffi::Buffer<ffi::F64> a, ffi::ResultBuffer<ffi::F64> inv) {
  auto dims = a.dimensions();
  if (dims.size() < 2) return ffi::Error::InvalidArgument("spd_inverse: A must be a matrix");
  const int64_t n = dims[dims.size() - 1];
  if (!shaped(dims, dims, 2, {n, n}) || !shaped(inv->dimensions(), dims, 2, {n, n}))
    return ffi::Error::InvalidArgument("spd_inverse: A and A^-1 must be square, (..., n, n)");
  const int64_t batch = batch_of(dims, 2);
  constexpr int64_t L = kLanes;
  std::vector<double> W(n * n * L), X(n * n * L), rinv(n * L);
  auto at = [n](int64_t i, int64_t j) { return (i * n + j) * L; };
  for (int64_t b0 = 0; b0 < batch; b0 += L) {
    const int64_t lanes = batch - b0 < L ? batch - b0 : L;
    const double* A = a.typed_data() + b0 * n * n;
    for (int64_t l = 0; l < L; ++l)  // missing lanes factorize the identity
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j)
          W[at(i, j) + l] = l < lanes ? A[l * n * n + i * n + j] : (i == j ? 1.0 : 0.0);
    bool ok[L];
    for (int64_t l = 0; l < L; ++l) ok[l] = true;
    for (int64_t j = 0; j < n; ++j) {  // W <- L, lower triangle
      double* Wjj = &W[at(j, j)];
      for (int64_t k = 0; k < j; ++k) {
        const double* Wjk = &W[at(j, k)];
        JAXMB_LANES
        for (int64_t l = 0; l < L; ++l) Wjj[l] -= Wjk[l] * Wjk[l];
      }
      for (int64_t l = 0; l < L; ++l) ok[l] = ok[l] && Wjj[l] > 0.0;
      double* r = &rinv[j * L];
      JAXMB_LANES
      for (int64_t l = 0; l < L; ++l) {
        const double d = Wjj[l] > 0.0 ? Wjj[l] : 1.0;  // a failed lane goes on harmlessly
        Wjj[l] = std::sqrt(d);
        r[l] = 1.0 / Wjj[l];
      }
      for (int64_t i = j + 1; i < n; ++i) {
        double* Wij = &W[at(i, j)];
        for (int64_t k = 0; k < j; ++k) {
          const double *Wik = &W[at(i, k)], *Wjk = &W[at(j, k)];
          JAXMB_LANES
          for (int64_t l = 0; l < L; ++l) Wij[l] -= Wik[l] * Wjk[l];
        }
        JAXMB_LANES
        for (int64_t l = 0; l < L; ++l) Wij[l] *= r[l];
      }
    }
    for (int64_t c = 0; c < n; ++c) {  // X = L^-1, lower triangular, column by column
      double* Xcc = &X[at(c, c)];
      JAXMB_LANES
      for (int64_t l = 0; l < L; ++l) Xcc[l] = rinv[c * L + l];
      for (int64_t i = c + 1; i < n; ++i) {
        double s[L] = {};
        for (int64_t k = c; k < i; ++k) {
          const double *Wik = &W[at(i, k)], *Xkc = &X[at(k, c)];
          JAXMB_LANES
          for (int64_t l = 0; l < L; ++l) s[l] -= Wik[l] * Xkc[l];
        }
        double* Xic = &X[at(i, c)];
        JAXMB_LANES
        for (int64_t l = 0; l < L; ++l) Xic[l] = s[l] * rinv[i * L + l];
      }
    }
    for (int64_t i = 0; i < n; ++i)  // W <- X^T X: (X^T X)_ij = sum_{k >= max(i, j)} X_ki X_kj
      for (int64_t j = 0; j <= i; ++j) {
        double s[L] = {};
        for (int64_t k = i; k < n; ++k) {
          const double *Xki = &X[at(k, i)], *Xkj = &X[at(k, j)];
          JAXMB_LANES
          for (int64_t l = 0; l < L; ++l) s[l] += Xki[l] * Xkj[l];
        }
        double* Wij = &W[at(i, j)];
        JAXMB_LANES
        for (int64_t l = 0; l < L; ++l) Wij[l] = s[l];
      }
    for (int64_t l = 0; l < lanes; ++l) {
      double* out = inv->typed_data() + (b0 + l) * n * n;
      if (!ok[l] || !all_finite(A + l * n * n, n * n)) {
        fill_nan(out, n * n);
        continue;
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j) out[i * n + j] = out[j * n + i] = W[at(i, j) + l];
    }
  }
  return ffi::Error::Success();
}

// qdd with C qdd = gamma (kept pivots) minimising (qdd - M^-1 F)^T M (qdd - M^-1 F): with
// w = M^(-1/2), Ch = C diag(w), Ch^T[:, perm] = Q R, kept = |R_jj| > rtol max |R_jj|,
// y0 = w F, R11^T u = [gamma - Ch y0]_perm (kept rows), qdd = w (y0 + Q u), Q u applied as
// H_0 ... H_(k-1) [u; 0] (Q is never formed). Also the pivots |R_jj|.
ffi::Error GaussProjection(ffi::Buffer<ffi::F64> w, ffi::Buffer<ffi::F64> f,
                           ffi::Buffer<ffi::F64> c, ffi::Buffer<ffi::F64> gamma,
                           ffi::ResultBuffer<ffi::F64> qdd, ffi::ResultBuffer<ffi::F64> pivots,
                           double rtol) {
  auto cd = c.dimensions();
  if (cd.size() < 2)
    return ffi::Error::InvalidArgument("gauss_projection: C must be a matrix");
  const int64_t rows = cd[cd.size() - 2], n = cd[cd.size() - 1];
  const int64_t k = rows < n ? rows : n;
  if (!shaped(w.dimensions(), cd, 2, {n}) || !shaped(f.dimensions(), cd, 2, {n}) ||
      !shaped(gamma.dimensions(), cd, 2, {rows}) || !shaped(qdd->dimensions(), cd, 2, {n}) ||
      !shaped(pivots->dimensions(), cd, 2, {k}))
    return ffi::Error::InvalidArgument(
        "gauss_projection: for C (..., rows, n), w, F and qdd must be (..., n), gamma (..., "
        "rows), pivots (..., min(rows, n)), with the same batch");
  const int64_t batch = batch_of(cd, 2);
  // W: Ch^T (n x rows) column-major, i.e. column r of W is row r of Ch
  std::vector<double> W(n * rows), Ch(rows * n), V(n * k), tau(k), y0(n), z(n);
  std::vector<int32_t> piv(rows);
  for (int64_t s = 0; s < batch; ++s) {
    const double* ws = w.typed_data() + s * n;
    const double* fs = f.typed_data() + s * n;
    const double* cs = c.typed_data() + s * rows * n;
    const double* gs = gamma.typed_data() + s * rows;
    double* out = qdd->typed_data() + s * n;
    double* d = pivots->typed_data() + s * k;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i) Ch[r * n + i] = W[r * n + i] = cs[r * n + i] * ws[i];
    householder_qr(W.data(), n, rows, piv.data(), V.data(), tau.data());
    double dmax = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      d[j] = std::fabs(W[j * n + j]);
      if (std::isnan(d[j]) || d[j] > dmax) dmax = d[j];  // as jnp.max: nan propagates
    }
    for (int64_t i = 0; i < n; ++i) y0[i] = ws[i] * fs[i];
    for (int64_t i = 0; i < n; ++i) z[i] = 0.0;
    for (int64_t j = 0; j < k; ++j) {  // forward substitution with R11^T, kept pivots only
      if (!(d[j] > rtol * dmax)) continue;
      const int64_t r = piv[j];
      double acc = gs[r];
      for (int64_t i = 0; i < n; ++i) acc -= Ch[r * n + i] * y0[i];
      for (int64_t l = 0; l < j; ++l) acc -= W[j * n + l] * z[l];  // R_lj = W[j n + l]
      z[j] = acc / W[j * n + j];
    }
    for (int64_t j = k - 1; j >= 0; --j)  // z <- H_j z
      if (tau[j] != 0.0) reflect(V.data() + j * n, tau[j], z.data(), j, n);
    for (int64_t i = 0; i < n; ++i) out[i] = ws[i] * (y0[i] + z[i]);
    if (!(all_finite(ws, n) && all_finite(fs, n) && all_finite(cs, rows * n) &&
          all_finite(gs, rows))) {  // nan in, nan out: the step fails, not a wrong qdd
      fill_nan(out, n);
      fill_nan(d, k);
    }
  }
  return ffi::Error::Success();
}

// (x, y) <- (c x - s y, s x + c y), elementwise over `count` entries: a plane rotation of two
// columns.
void rotate(double* x, double* y, int64_t count, double c, double s) {
  for (int64_t i = 0; i < count; ++i) {
    const double a = x[i], b = y[i];
    x[i] = c * a - s * b;
    y[i] = s * a + c * b;
  }
}

// One-sided Jacobi on the columns of G (rows x cols, column-major, rows >= cols): plane
// rotations J of columns p, q make them orthogonal, G <- G J, V <- V J (V starts as I), sweep
// after sweep until every pair satisfies |g_p . g_q| <= rows eps |g_p| |g_q|. Then G = U S
// with orthogonal columns, and A = G_0 = U S V^T. Each rotation is the one that diagonalizes
// the 2 x 2 Gram matrix [[a, g], [g, b]]: zeta = (b - a) / 2g, t = sign(zeta) / (|zeta| +
// sqrt(1 + zeta^2)), c = 1 / sqrt(1 + t^2), s = c t (Golub & Van Loan, 4th ed., sec. 8.6.3).
void jacobi_columns(double* G, int64_t rows, int64_t cols, double* V) {
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < cols; ++i) V[j * cols + i] = (i == j) ? 1.0 : 0.0;
  const double tol = static_cast<double>(rows) * 2.220446049250313e-16;
  for (int sweep = 0; sweep < 60; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < cols; ++p) {
      for (int64_t q = p + 1; q < cols; ++q) {
        double* gp = G + p * rows;
        double* gq = G + q * rows;
        double a = 0.0, b = 0.0, g = 0.0;
        _Pragma("omp simd reduction(+ : a, b, g)")
        for (int64_t i = 0; i < rows; ++i) {
          a += gp[i] * gp[i];
          b += gq[i] * gq[i];
          g += gp[i] * gq[i];
        }
        if (!(std::fabs(g) > tol * std::sqrt(a) * std::sqrt(b))) continue;
        rotated = true;
        const double zeta = (b - a) / (2.0 * g), z = std::fabs(zeta);
        const double root = z < 1e150 ? std::sqrt(1.0 + zeta * zeta) : z;  // no overflow
        const double t = (zeta >= 0.0 ? 1.0 : -1.0) / (z + root);
        const double c = 1.0 / std::sqrt(1.0 + t * t), s = c * t;
        rotate(gp, gq, rows, c, s);
        rotate(V + p * cols, V + q * cols, cols, c, s);
      }
    }
    if (!rotated) break;
  }
}

// After jacobi_columns: s = the column norms of G in non-increasing order (ord: their columns),
// and G's columns normalized. A zero column gets a unit vector orthogonal to all the others
// (Gram-Schmidt, twice, on the coordinate vector that keeps the most of its length), so that
// U has orthonormal columns as LAPACK's does.
void normalize_columns(double* G, int64_t rows, int64_t cols, double* s, int64_t* ord,
                       double* scratch) {
  for (int64_t j = 0; j < cols; ++j) {
    double a = 0.0;
    for (int64_t i = 0; i < rows; ++i) a += G[j * rows + i] * G[j * rows + i];
    s[j] = std::sqrt(a);
    ord[j] = j;
  }
  for (int64_t j = 1; j < cols; ++j) {  // insertion sort, non-increasing, stable
    const int64_t o = ord[j];
    int64_t i = j;
    for (; i > 0 && s[ord[i - 1]] < s[o]; --i) ord[i] = ord[i - 1];
    ord[i] = o;
  }
  for (int64_t j = 0; j < cols; ++j)
    if (s[j] > 0.0)
      for (int64_t i = 0; i < rows; ++i) G[j * rows + i] /= s[j];
  for (int64_t j = 0; j < cols; ++j) {
    if (s[j] > 0.0 || std::isnan(s[j])) continue;
    double* u = G + j * rows;
    double best = -1.0;
    for (int64_t e = 0; e < rows; ++e) {  // the coordinate vector least in the others' span
      for (int64_t i = 0; i < rows; ++i) scratch[i] = (i == e) ? 1.0 : 0.0;
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t o = 0; o < cols; ++o) {
          if (o == j || !(s[o] > 0.0 || o < j)) continue;  // the nonzero and completed columns
          const double* w = G + o * rows;
          double d = 0.0;
          for (int64_t i = 0; i < rows; ++i) d += w[i] * scratch[i];
          for (int64_t i = 0; i < rows; ++i) scratch[i] -= d * w[i];
        }
      double a = 0.0;
      for (int64_t i = 0; i < rows; ++i) a += scratch[i] * scratch[i];
      if (a > best) {
        best = a;
        for (int64_t i = 0; i < rows; ++i) u[i] = scratch[i];
      }
    }
    const double norm = std::sqrt(best);
    for (int64_t i = 0; i < rows; ++i) u[i] /= norm;
  }
}

// A (m x n, row-major) = U (m x k) diag(s) Vt (k x n), k = min(m, n). Jacobi runs on the
// columns of A when m >= n, else on the columns of A^T (A^T = U' S V'^T gives U = V', Vt = U'^T).
ffi::Error Svd(ffi::Buffer<ffi::F64> a, ffi::ResultBuffer<ffi::F64> u,
               ffi::ResultBuffer<ffi::F64> sv, ffi::ResultBuffer<ffi::F64> vt) {
  auto dims = a.dimensions();
  if (dims.size() < 2) return ffi::Error::InvalidArgument("svd: A must be a matrix");
  const int64_t m = dims[dims.size() - 2], n = dims[dims.size() - 1];
  const bool tall = m >= n;
  const int64_t rows = tall ? m : n, k = tall ? n : m;
  if (!shaped(u->dimensions(), dims, 2, {m, k}) || !shaped(sv->dimensions(), dims, 2, {k}) ||
      !shaped(vt->dimensions(), dims, 2, {k, n}))
    return ffi::Error::InvalidArgument(
        "svd: results must be U (..., m, k), s (..., k), Vt (..., k, n), k = min(m, n)");
  const int64_t batch = batch_of(dims, 2);
  std::vector<double> G(rows * k), V(k * k), s(k), scratch(rows);
  std::vector<int64_t> ord(k);
  for (int64_t b = 0; b < batch; ++b) {
    const double* A = a.typed_data() + b * m * n;
    double* U = u->typed_data() + b * m * k;
    double* S = sv->typed_data() + b * k;
    double* Vt = vt->typed_data() + b * k * n;
    if (tall) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) G[j * m + i] = A[i * n + j];
    } else {
      for (int64_t i = 0; i < m * n; ++i) G[i] = A[i];  // column j of A^T is row j of A
    }
    // scaled by a power of two (exact) to max |A_ij| in [0.5, 1): the squared entries
    // neither overflow nor underflow
    double amax = 0.0;
    for (int64_t i = 0; i < m * n; ++i) amax = std::fmax(amax, std::fabs(G[i]));
    int exponent = 0;
    if (amax > 0.0 && std::isfinite(amax)) std::frexp(amax, &exponent);
    const double inverse = std::ldexp(1.0, -exponent);
    if (exponent > -1000 && exponent < 1000)  // 2^-exponent is a normal number
      for (int64_t i = 0; i < m * n; ++i) G[i] *= inverse;
    else
      for (int64_t i = 0; i < m * n; ++i) G[i] = std::ldexp(G[i], -exponent);
    jacobi_columns(G.data(), rows, k, V.data());
    normalize_columns(G.data(), rows, k, s.data(), ord.data(), scratch.data());
    for (int64_t c = 0; c < k; ++c) {
      const int64_t o = ord[c];
      S[c] = std::ldexp(s[o], exponent);  // exact; s[o] * scale would overflow at 2^1024
      if (tall) {  // U = G (m x n), Vt = V^T
        for (int64_t i = 0; i < m; ++i) U[i * k + c] = G[o * m + i];
        for (int64_t j = 0; j < n; ++j) Vt[c * n + j] = V[o * k + j];
      } else {  // U = V (m x m), Vt = G^T (m x n)
        for (int64_t i = 0; i < m; ++i) U[i * k + c] = V[o * k + i];
        for (int64_t j = 0; j < n; ++j) Vt[c * n + j] = G[o * n + j];
      }
    }
    if (!all_finite(A, m * n)) {  // nan in, nan out (as LAPACK)
      fill_nan(U, m * k);
      fill_nan(S, k);
      fill_nan(Vt, k * n);
    }
  }
  return ffi::Error::Success();
}

// |B_X|_F = |C_X^T Q~_X|_F per row set X (seed 001, eq. 27) for C (rows x n) and Q~ (rows x p)
// of one member: sets are rows[starts[s] .. starts[s + 1]). Q~'s zero columns (the range of
// C, zeroed by left_null_qr) add nothing and are skipped; a nan makes a column count.
ffi::Error SetNorms(ffi::Buffer<ffi::F64> c, ffi::Buffer<ffi::F64> qt,
                    ffi::ResultBuffer<ffi::F64> out, ffi::Span<const int64_t> rows,
                    ffi::Span<const int64_t> starts) {
  auto cd = c.dimensions(), qd = qt.dimensions();
  if (cd.size() < 2 || qd.size() != cd.size())
    return ffi::Error::InvalidArgument(
        "set_norms: C (..., rows, n) and Q~ (..., rows, p) must be matrices of the same rank");
  const int64_t m = cd[cd.size() - 2], n = cd[cd.size() - 1], p = qd[qd.size() - 1];
  const int64_t sets = static_cast<int64_t>(starts.size()) - 1;
  if (sets < 0 || !shaped(qd, cd, 2, {m, p}) || !shaped(out->dimensions(), cd, 2, {sets}))
    return ffi::Error::InvalidArgument(
        "set_norms: for C (..., rows, n), Q~ must be (..., rows, p) and the result (..., sets), "
        "with the same batch");
  const int64_t count_rows = static_cast<int64_t>(rows.size());
  for (int64_t s = 0; s < sets; ++s)
    if (starts[s] < 0 || starts[s] > starts[s + 1] || starts[s + 1] > count_rows)
      return ffi::Error::InvalidArgument("set_norms: starts must be non-decreasing in rows");
  for (int64_t e = 0; e < count_rows; ++e)
    if (rows[e] < 0 || rows[e] >= m)
      return ffi::Error::InvalidArgument("set_norms: a row index is outside C");
  const int64_t batch = batch_of(cd, 2);
  std::vector<int64_t> live(p);
  std::vector<double> column(n), size(p);
  for (int64_t b = 0; b < batch; ++b) {
    const double* C = c.typed_data() + b * m * n;
    const double* Q = qt.typed_data() + b * m * p;
    double* B = out->typed_data() + b * sets;
    for (int64_t k = 0; k < p; ++k) size[k] = 0.0;  // sum of |Q~_rk| over the rows r
    for (int64_t r = 0; r < m; ++r) {
      JAXMB_LANES
      for (int64_t k = 0; k < p; ++k) size[k] += std::fabs(Q[r * p + k]);
    }
    int64_t count = 0;
    for (int64_t k = 0; k < p; ++k)
      if (size[k] != 0.0) live[count++] = k;  // nan counts
    for (int64_t s = 0; s < sets; ++s) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < count; ++kk) {  // column k of B_X = C_X^T (column k of Q~_X)
        const int64_t k = live[kk];
        for (int64_t i = 0; i < n; ++i) column[i] = 0.0;
        for (int64_t e = starts[s]; e < starts[s + 1]; ++e) {
          const int64_t r = rows[e];
          const double w = Q[r * p + k];
          for (int64_t i = 0; i < n; ++i) column[i] += C[r * n + i] * w;
        }
        _Pragma("omp simd reduction(+ : acc)")
        for (int64_t i = 0; i < n; ++i) acc += column[i] * column[i];
      }
      B[s] = std::sqrt(acc);
    }
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxmb_gauss_projection_f64, GaussProjection,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Attr<double>("rtol"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxmb_pivoted_qr_f64, PivotedQr,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Attr<bool>("pivoting"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxmb_svd_f64, Svd,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxmb_triangular_solve_f64, TriangularSolve,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Attr<bool>("lower"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxmb_set_norms_f64, SetNorms,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Attr<ffi::Span<const int64_t>>("rows")
                                  .Attr<ffi::Span<const int64_t>>("starts"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxmb_left_null_f64, LeftNull,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Attr<double>("rtol"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(jaxmb_spd_inverse_f64, SpdInverse,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>());
